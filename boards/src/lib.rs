//! Board descriptions as data: addresses, sizes and interrupt numbers of the
//! platform, generated from `boards/<name>.toml` so no logic holds a magic number.
#![no_std]

/// A physical address range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRange {
    /// First byte.
    pub base: u64,
    /// Length in bytes.
    pub size: u64,
}

impl MemoryRange {
    /// One past the last byte.
    pub const fn end(&self) -> u64 {
        self.base + self.size
    }

    /// Whether `[addr, addr + len)` lies wholly inside this range
    /// (without overflowing).
    pub const fn contains(&self, addr: u64, len: u64) -> bool {
        match addr.checked_add(len) {
            Some(end) => addr >= self.base && end <= self.end(),
            None => false,
        }
    }
}

/// Everything the firmware needs to know about the machine it runs on.
#[derive(Clone, Copy, Debug)]
pub struct Board {
    /// Short name, as in the file name.
    pub name: &'static str,
    /// Cores the firmware is built for (Aff0 = 0..max_cores, Aff1..3 = 0).
    pub max_cores: usize,
    /// Generic counter frequency.
    pub counter_hz: u64,
    /// Longest time an RTOS core takes to give itself to the monitor and
    /// be called back for an interrupt that came meanwhile (ns): the RTOS
    /// does not leave when its next timer event is nearer.
    pub rtos_leave_ns: u64,
    /// Where every core resets, and where the firmware image lives.
    pub secure_flash: MemoryRange,
    /// All secure RAM.
    pub secure_ram: MemoryRange,
    /// The monitor's part of secure RAM.
    pub monitor_ram: MemoryRange,
    /// The RTOS's part of secure RAM (its image is copied here).
    pub rtos_ram: MemoryRange,
    /// Linux's RAM.
    pub normal_ram: MemoryRange,
    /// The region both worlds share.
    pub shared: MemoryRange,
    /// The normal world's EL2 layer's RAM (configurations with partitions).
    pub hyp_ram: MemoryRange,
    /// GICv3 distributor.
    pub gicd: u64,
    /// First GICv3 redistributor.
    pub gicr: u64,
    /// The kind of both UARTs.
    pub uart: UartKind,
    /// Linux's UART.
    pub normal_uart: u64,
    /// The secure world's UART (monitor and RTOS log).
    pub secure_uart: u64,
    /// The UARTs' reference clock.
    pub uart_clock_hz: u32,
    /// How the monitor powers the machine off and resets it.
    pub power: Power,
    /// Linux's virtio-mmio transports, which the monitor resets before a
    /// restart copies Linux's images ([`VirtioMmio::NONE`] without).
    pub virtio_mmio: VirtioMmio,
    /// Secure physical timer PPI (the RTOS tick).
    pub secure_timer_intid: u32,
    /// Software-generated interrupts by role.
    pub sgi: Sgis,
    /// Non-secure virtual timer PPI (Linux's tick).
    pub nonsecure_virtual_timer_intid: u32,
    /// SPI number of the RTOS -> Linux doorbell.
    pub doorbell_spi: u32,
    /// The RTOS image in secure flash.
    pub rtos_image: u64,
    /// The EL2 layer's image in secure flash.
    pub hyp_image: u64,
    /// The boot configuration (per-core policy) and the workload blob, in
    /// secure flash: Linux can neither read nor change them.
    pub boot_config: u64,
    /// The header of Linux's images in secure flash (`tandem_abi::image::
    /// LinuxImages`); the images follow it, up to the end of the flash.
    pub linux_images: u64,
    /// Linux kernel Image entry point.
    pub kernel_entry: u64,
    /// Device tree blob handed to Linux.
    pub dtb: u64,
    /// Initramfs.
    pub initrd: u64,
}

/// A UART's programming model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UartKind {
    /// Arm PrimeCell PL011.
    Pl011,
    /// NXP i.MX UART.
    Imx,
}

/// The secure devices that power the machine off and reset it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Power {
    /// A secure PL061 GPIO whose lines the machine's power controller
    /// watches (QEMU virt).
    Pl061 {
        /// The PL061's registers.
        base: u64,
        /// The line that powers the machine off.
        poweroff_line: u8,
        /// The line that resets it.
        reset_line: u8,
    },
    /// NXP i.MX: power-off by the SNVS (LPCR's DP_EN and TOP), reset by a
    /// watchdog's software reset (WCR's SRS and WDA).
    ImxSnvsWdog {
        /// SNVS_HP's registers (the LP registers follow them).
        snvs: u64,
        /// The watchdog's registers.
        wdog: u64,
    },
}

impl Power {
    /// The register blocks the monitor must map (repeated when one).
    pub const fn devices(&self) -> [u64; 2] {
        match *self {
            Self::Pl061 { base, .. } => [base, base],
            Self::ImxSnvsWdog { snvs, wdog } => [snvs, wdog],
        }
    }
}

/// Normal-world virtio-mmio transports: `count` register blocks, `stride`
/// bytes apart from `base` (QEMU virt: 32 of 0x200 from 0x0A00_0000, a
/// `-device virtio-*-device` taking one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VirtioMmio {
    /// The first transport's registers.
    pub base: u64,
    /// Bytes from one transport to the next.
    pub stride: u64,
    /// Transports.
    pub count: u32,
}

impl VirtioMmio {
    /// No transports.
    pub const NONE: Self = Self {
        base: 0,
        stride: 0,
        count: 0,
    };

    /// The registers of all of them.
    pub const fn range(&self) -> MemoryRange {
        MemoryRange {
            base: self.base,
            size: self.stride * self.count as u64,
        }
    }

    /// Each transport's registers' base.
    pub fn transports(&self) -> impl Iterator<Item = u64> + use<> {
        let (base, stride) = (self.base, self.stride);
        (0..u64::from(self.count)).map(move |i| base + i * stride)
    }
}

/// The SGIs (INTIDs 0..=15) the secure side uses, by role; Linux keeps 0-7.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sgis {
    /// RTOS: reschedule this core (cross-core dispatch).
    pub reschedule: u32,
    /// RTOS demo application: its interrupt-to-task path.
    pub demo: u32,
    /// RTOS: an RPC channel this core serves was rung (raised by the monitor).
    pub rpc: u32,
    /// Monitor: its doorbell (Group 0), which wakes a core idling in EL3.
    pub monitor: u32,
}

impl Sgis {
    /// The RTOS's SGIs (Secure Group 1).
    pub const fn rtos(&self) -> [u32; 3] {
        [self.reschedule, self.demo, self.rpc]
    }
}

/// Affinity fields of MPIDR_EL1 (Aff3, Aff2, Aff1, Aff0).
pub const MPIDR_AFFINITY_MASK: u64 = 0xFF_00FF_FFFF;

impl Board {
    /// The linear core index for an MPIDR value, if the board has that core.
    ///
    /// Only the affinity fields count; bits like U and MT are ignored.
    pub const fn core_index(&self, mpidr: u64) -> Option<usize> {
        let aff = mpidr & MPIDR_AFFINITY_MASK;
        if aff >> 8 != 0 {
            return None;
        }
        let index = (aff & 0xFF) as usize;
        if index < self.max_cores {
            Some(index)
        } else {
            None
        }
    }

    /// The MPIDR affinity value of a linear core index.
    pub const fn mpidr(&self, index: usize) -> u64 {
        index as u64
    }

    /// Ticks of the generic counter in `ns` nanoseconds, rounded up (so a
    /// bound in ns stays a bound in ticks).
    pub const fn ns_to_ticks_up(&self, ns: u64) -> u64 {
        let hz = self.counter_hz as u128;
        ((ns as u128 * hz).div_ceil(1_000_000_000)) as u64
    }

    /// Microseconds in `ticks` of the generic counter. Exact for any
    /// frequency: QEMU's 62.5 MHz is not a whole number of ticks per
    /// microsecond, and dividing by 62 ran console clocks 0.8 % fast.
    pub const fn ticks_to_us(&self, ticks: u64) -> u64 {
        let hz = self.counter_hz;
        ticks / hz * 1_000_000 + ticks % hz * 1_000_000 / hz
    }
}

include!(concat!(env!("OUT_DIR"), "/board.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_to_us_is_exact_at_a_fractional_rate() {
        let b = Board {
            counter_hz: 62_500_000,
            ..BOARD
        };
        assert_eq!(b.ticks_to_us(62_500_000), 1_000_000);
        assert_eq!(b.ticks_to_us(3_125_000), 50_000);
        assert_eq!(b.ticks_to_us(62), 0);
        assert_eq!(b.ticks_to_us(63), 1);
        assert_eq!(
            b.ticks_to_us(u64::MAX),
            u64::MAX / 62_500_000 * 1_000_000 + 352_825
        );
    }

    #[test]
    fn ns_to_ticks_up_rounds_up() {
        let b = Board {
            counter_hz: 62_500_000,
            ..BOARD
        };
        // 16 ns a tick.
        assert_eq!(b.ns_to_ticks_up(0), 0);
        assert_eq!(b.ns_to_ticks_up(1), 1);
        assert_eq!(b.ns_to_ticks_up(16), 1);
        assert_eq!(b.ns_to_ticks_up(17), 2);
        assert_eq!(b.ns_to_ticks_up(1000), 63);
        assert_eq!(b.ns_to_ticks_up(1_000_000_000), 62_500_000);
        // No overflow at the top: u64::MAX ns at 62.5 MHz fits.
        assert_eq!(b.ns_to_ticks_up(u64::MAX), u64::MAX / 16 + 1);
    }

    #[test]
    fn core_index_uses_affinity_only() {
        assert_eq!(BOARD.core_index(0x8000_0000), Some(0));
        assert_eq!(BOARD.core_index(0x8000_0003), Some(3));
        assert_eq!(
            BOARD.core_index(0x0100),
            None,
            "Aff1 != 0 is another cluster"
        );
        assert_eq!(BOARD.core_index(BOARD.max_cores as u64), None);
    }

    #[test]
    fn range_contains_rejects_overflow_and_straddling() {
        let r = MemoryRange {
            base: 0x1000,
            size: 0x1000,
        };
        assert!(r.contains(0x1000, 0x1000));
        assert!(!r.contains(0x1800, 0x1000));
        assert!(!r.contains(0xFFF, 1));
        assert!(!r.contains(u64::MAX, 2));
    }

    #[test]
    fn layout_is_consistent() {
        let b = BOARD;
        assert!(
            b.secure_ram
                .contains(b.monitor_ram.base, b.monitor_ram.size)
        );
        assert!(b.secure_ram.contains(b.rtos_ram.base, b.rtos_ram.size));
        assert!(
            b.monitor_ram.end() <= b.rtos_ram.base,
            "monitor and RTOS RAM overlap"
        );
        assert!(b.secure_flash.contains(b.rtos_image, 4096));
        // In flash, in this order: the RTOS image, the EL2 layer's image,
        // the boot configuration page and the partition table's, Linux's
        // images (the rest of the flash).
        assert!(b.hyp_image > b.rtos_image && b.hyp_image < b.boot_config);
        assert!(b.secure_flash.contains(b.boot_config, 0x2000));
        assert!(b.boot_config > b.rtos_image && b.boot_config + 0x2000 <= b.linux_images);
        // The EL2 layer's RAM: normal RAM outside the shared region, whole
        // 2 MiB blocks (it maps itself and no partition may hold it).
        assert!(b.normal_ram.contains(b.hyp_ram.base, b.hyp_ram.size));
        assert!(b.hyp_ram.end() <= b.shared.base || b.hyp_ram.base >= b.shared.end());
        assert!(
            b.hyp_ram.base.is_multiple_of(0x20_0000) && b.hyp_ram.size.is_multiple_of(0x20_0000)
        );
        assert!(b.secure_flash.contains(b.linux_images, 0x1000));
        // 64 MiB for the kernel image and its bss before the device tree.
        assert!(b.kernel_entry + 0x400_0000 <= b.dtb);
        assert!(b.normal_ram.contains(b.shared.base, b.shared.size));
        // The virtio-mmio transports lie in no RAM nor flash.
        let v = b.virtio_mmio.range();
        for r in [b.secure_flash, b.secure_ram, b.normal_ram] {
            assert!(v.size == 0 || v.end() <= r.base || v.base >= r.end());
        }
        assert_eq!(
            b.virtio_mmio.transports().count(),
            b.virtio_mmio.count as usize
        );
        for addr in [b.kernel_entry, b.dtb, b.initrd] {
            assert!(b.normal_ram.contains(addr, 1));
            assert!(!b.shared.contains(addr, 1));
        }
        assert_eq!(
            b.kernel_entry % 0x20_0000,
            0x0,
            "arm64 Image wants 2 MiB alignment"
        );
    }
}
