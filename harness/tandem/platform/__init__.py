"""The platform: what it takes to boot Tandem on QEMU and talk to it.

The board and platform configurations as data (`board`, `configs`,
`capacity`), the device tree and initramfs the harness adds (`dtb`, `cpio`),
QEMU's one command line (`qemu_command`), booting and running commands in
Linux (`boot`), the interactive console (`console`), the ABI's numbers
(`abi`), where files are (`paths`) and whether this machine's QEMU can boot
Tandem at all (`setup_check`).
"""
