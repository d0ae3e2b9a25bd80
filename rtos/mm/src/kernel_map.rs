//! The kernel part of every RTOS address space, from the board: the data
//! the firmware builds its tables from, here so a host test can build the
//! same tables and walk them.

use crate::{BLOCK, Kind, Mapping};
use tandem_board::Board;

/// Ranges the kernel part has at most: its RAM, five device blocks, the
/// shared region.
pub const KERNEL_RANGES: usize = 7;

/// The kernel's ranges for `board`, and how many of them are in use:
/// the RTOS's RAM (widened to 2 MiB blocks), the GIC distributor and
/// redistributors, the secure UART and the power devices (the 2 MiB block
/// around each, once where several share one), and the shared region,
/// Non-secure.
pub fn kernel_map(board: &Board) -> ([Mapping; KERNEL_RANGES], usize) {
    let block_of = |address: u64, kind| Mapping {
        base: address & !(BLOCK - 1),
        size: BLOCK,
        kind,
    };
    let ram_start = board.rtos_ram.base & !(BLOCK - 1);
    let ram_end = board.rtos_ram.end().next_multiple_of(BLOCK);
    let mut kernel = [
        Mapping {
            base: ram_start,
            size: ram_end - ram_start,
            kind: Kind::Kernel,
        },
        block_of(board.gicd, Kind::Device),
        block_of(board.gicr, Kind::Device),
        block_of(board.secure_uart, Kind::Device),
        block_of(board.power.devices()[0], Kind::Device),
        block_of(board.power.devices()[1], Kind::Device),
        Mapping {
            base: board.shared.base,
            size: board.shared.size,
            kind: Kind::Shared,
        },
    ];
    // Devices that share a block appear once.
    let mut n = kernel.len();
    let mut i = 0;
    while i < n {
        if kernel[..i].iter().any(|m| m.base == kernel[i].base) {
            kernel.copy_within(i + 1..n, i);
            n -= 1;
        } else {
            i += 1;
        }
    }
    (kernel, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AddressSpace, Security, SecurityMismatch};
    use std::boxed::Box;
    use tandem_board::BOARD;

    const PA: u64 = 0x0E40_0000;

    fn board_space(kernel: &[Mapping]) -> Box<AddressSpace> {
        let mut s = Box::new(AddressSpace::EMPTY);
        s.build(PA, kernel, &[])
            .expect("the board's kernel map builds");
        s
    }

    #[test]
    fn the_boards_kernel_map_walks_to_secure_ram_devices_and_the_non_secure_shared_region() {
        let (kernel, n) = kernel_map(&BOARD);
        let s = board_space(&kernel[..n]);
        let ram = BOARD.rtos_ram;
        assert_eq!(
            s.check_security(PA, ram.base, ram.size, Security::Secure),
            Ok(())
        );
        let shared = BOARD.shared;
        assert_eq!(
            s.check_security(PA, shared.base, shared.size, Security::NonSecure),
            Ok(())
        );
        let t = s.translate(PA, ram.base).unwrap();
        assert_eq!((t.kind, t.security), (Kind::Kernel, Security::Secure));
        let t = s.translate(PA, shared.base).unwrap();
        assert_eq!((t.kind, t.security), (Kind::Shared, Security::NonSecure));
        for device in [BOARD.gicd, BOARD.gicr, BOARD.secure_uart] {
            assert_eq!(s.translate(PA, device).unwrap().kind, Kind::Device);
        }
        // Not the flash, not Linux's RAM outside the shared region. (The
        // monitor's RAM is, where it shares a 2 MiB block with the RTOS's:
        // the kernel part is made of whole blocks.)
        assert_eq!(s.translate(PA, BOARD.secure_flash.base), None);
        assert_eq!(s.translate(PA, BOARD.normal_ram.base), None);
    }

    #[test]
    fn the_rtos_ram_mapped_non_secure_fails_the_check() {
        let (mut kernel, n) = kernel_map(&BOARD);
        kernel[0].kind = Kind::Shared;
        let s = board_space(&kernel[..n]);
        let ram = BOARD.rtos_ram;
        assert_eq!(
            s.check_security(PA, ram.base, ram.size, Security::Secure),
            Err(SecurityMismatch {
                address: ram.base,
                mapped: Security::NonSecure
            })
        );
    }
}
