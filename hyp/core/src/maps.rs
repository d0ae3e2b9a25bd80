//! What each address space holds: the EL2 layer's own map (stage 1) and a
//! partition's (stage 2), built from the board and the partition table.
//!
//! A partition's stage 2 maps, at their own addresses: its RAM; its part
//! of the shared region if it has the region; its devices; and the
//! SGI_base redistributor frame of each of its cores. Their RD_base frames trap, and the layer emulates
//! them ([`crate::gic::gicr_access`]): a partition sees no LPIs, whose
//! tables the GIC would read and write at any physical address the
//! partition named; and Linux walks the redistributor frames until one
//! says it is the last (GICR_TYPER.Last), so the frame of a partition's
//! last core says so when another core's frame follows it. The GIC
//! distributor is never mapped: every access traps and is emulated
//! ([`crate::gic::gicd_access`]). Everything else faults, and the fault is
//! handed back to the partition's Linux as an external abort.
//!
//! Its part of the shared region ([`shared_region`],
//! `tandem_abi::layout`): the header read-only; every part of its own
//! cores (records, trace rings, histograms, stolen-time records), each on
//! pages no other core's part shares; the context-switch record and the RPC
//! channels only if it has Tandem's driver; and the partitions' mailbox,
//! the one page they share on purpose (what one partition writes there
//! another reads: a channel between them, not a part of either). Never the
//! monitor's stub page, nor another partition's cores' parts: one
//! partition cannot read another's RPC payloads, forge its answers, wedge
//! its channels, write its stolen time or lock words (which steer the
//! RTOS's `migrate` placement), or read its trace rings.

use crate::tables::{Kind, MapError, Pool};
use tandem_abi::image::Span;
use tandem_abi::layout;
use tandem_abi::partition::Partition;

/// Bytes of one core's redistributor (RD_base and SGI_base, 64 KiB each;
/// GICv3 without virtual LPIs).
pub const GICR_STRIDE: u64 = 0x2_0000;
/// Bytes of one redistributor frame.
pub const GICR_FRAME: u64 = 0x1_0000;
/// Bytes of the distributor's registers.
pub const GICD_SIZE: u64 = 0x1_0000;

/// The machine as the maps need it.
#[derive(Clone, Copy, Debug)]
pub struct Machine {
    /// Cores the machine has: redistributor frames exist for these only, the
    /// last one's saying so itself.
    pub cores: usize,
    /// The GIC distributor.
    pub gicd: u64,
    /// The first redistributor.
    pub gicr: u64,
    /// The shared region.
    pub shared: Span,
}

impl Machine {
    /// `core`'s RD_base frame.
    pub const fn rd_base(&self, core: usize) -> u64 {
        self.gicr + core as u64 * GICR_STRIDE
    }

    /// The RD_base frame that must say it is the last for `p`: its last
    /// core's, when that is not the machine's last core.
    pub fn boundary_frame(&self, p: &Partition) -> Option<u64> {
        let (first, count) = p.core_range();
        let last = first + count - 1;
        (last + 1 < self.cores).then(|| self.rd_base(last))
    }

    /// The RD_base frame of one of `p`'s cores that `ipa` falls in (the
    /// layer emulates them all): its base, and whether it is
    /// [`Machine::boundary_frame`].
    pub fn rd_frame(&self, p: &Partition, ipa: u64) -> Option<(u64, bool)> {
        let (first, count) = p.core_range();
        let frame = (first..first + count)
            .map(|core| self.rd_base(core))
            .find(|rd| (*rd..*rd + GICR_FRAME).contains(&ipa))?;
        Some((frame, self.boundary_frame(p) == Some(frame)))
    }
}

/// Maps partition `p`'s part of the shared region (the module's comment).
pub fn shared_region(
    pool: &mut Pool<'_>,
    machine: &Machine,
    p: &Partition,
) -> Result<(), MapError> {
    let base = machine.shared.base;
    if machine.shared.size < layout::LAYOUT_BYTES as u64 {
        return Err(MapError::Range(base));
    }
    let at = |offset: usize| base + offset as u64;
    pool.map(base, layout::HEADER_BYTES as u64, Kind::GuestSharedReadOnly)?;
    let (first, count) = p.core_range();
    for kind in layout::PER_CORE {
        let (offset, length) = kind.span(first, count);
        pool.map(at(offset), length as u64, Kind::GuestShared)?;
    }
    if p.tandem() {
        let (offset, length) = layout::TANDEM_PARTS;
        pool.map(at(offset), length as u64, Kind::GuestShared)?;
    }
    pool.map(
        at(layout::PARTITION_MAILBOX_OFFSET),
        layout::PAGE as u64,
        Kind::GuestShared,
    )
}

/// Fills `pool` with partition `p`'s stage-2 map.
pub fn stage2(pool: &mut Pool<'_>, machine: &Machine, p: &Partition) -> Result<(), MapError> {
    pool.map(p.ram.base, p.ram.size, Kind::GuestRam)?;
    if p.shared_region() {
        shared_region(pool, machine, p)?;
    }
    for device in p.devices() {
        pool.map(device.base, device.size, Kind::GuestDevice)?;
    }
    let (first, count) = p.core_range();
    for core in first..first + count {
        pool.map(
            machine.rd_base(core) + GICR_FRAME,
            GICR_FRAME,
            Kind::GuestDevice,
        )?;
    }
    Ok(())
}

/// The layer's image in its RAM: code from the start to `text_end`, then
/// data; the rest of its RAM is data too (tables, stacks, the partition
/// table the monitor copied).
#[derive(Clone, Copy, Debug)]
pub struct Image {
    /// Its RAM.
    pub ram: Span,
    /// One past its code (page aligned).
    pub text_end: u64,
}

/// Fills `pool` with the layer's own identity map at EL2: its code
/// read-only and executable, its data never executed, the GIC and the
/// partitions' consoles as devices. Nothing else: a stray access faults.
pub fn stage1(
    pool: &mut Pool<'_>,
    machine: &Machine,
    image: &Image,
    consoles: impl Iterator<Item = Span>,
) -> Result<(), MapError> {
    let text = image.text_end - image.ram.base;
    pool.map(image.ram.base, text, Kind::HypCode)?;
    pool.map(image.text_end, image.ram.size - text, Kind::HypData)?;
    pool.map(machine.gicd, GICD_SIZE, Kind::HypDevice)?;
    pool.map(
        machine.gicr,
        machine.cores as u64 * GICR_STRIDE,
        Kind::HypDevice,
    )?;
    for console in consoles {
        pool.map(console.base, console.size, Kind::HypDevice)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::{Leaf, Page};
    use std::vec;

    pub(crate) const MACHINE: Machine = Machine {
        cores: 4,
        gicd: 0x0800_0000,
        gicr: 0x080A_0000,
        shared: Span {
            base: 0x7FE0_0000,
            size: 0x20_0000,
        },
    };

    pub(crate) fn partition(cores: u32, ram: Span, uart: u64) -> Partition {
        let mut p = Partition {
            name: b'A',
            boot_core: cores.trailing_zeros() as u8,
            console: 0,
            device_count: 1,
            cores,
            ram,
            ..Partition::EMPTY
        };
        p.devices[0] = Span {
            base: uart,
            size: 0x1000,
        };
        p
    }

    fn kind(leaf: Option<Leaf>) -> Option<u64> {
        leaf.map(|l| l.attributes)
    }

    #[test]
    fn a_partition_reaches_its_ram_devices_and_redistributors_only() {
        let ram = Span {
            base: 0x4000_0000,
            size: 0x2000_0000,
        };
        let mut a = partition(0b0111, ram, 0x0900_0000);
        a.flags = tandem_abi::partition::FLAG_SHARED_REGION;
        let mut pages = vec![Page::EMPTY; 16];
        let mut pool = Pool::new(&mut pages, 0x7FC8_0000).unwrap();
        stage2(&mut pool, &MACHINE, &a).unwrap();
        let ram_kind = Some(Kind::GuestRam.attributes());
        let dev = Some(Kind::GuestDevice.attributes());
        assert_eq!(kind(pool.translate(0x4000_0000)), ram_kind);
        assert_eq!(kind(pool.translate(0x5FFF_FFF8)), ram_kind);
        assert_eq!(pool.translate(0x6000_0000), None, "B's RAM");
        assert_eq!(pool.translate(0x7FC0_0000), None, "the layer's RAM");
        assert_eq!(
            kind(pool.translate(0x7FE0_0000)),
            Some(Kind::GuestSharedReadOnly.attributes()),
            "the shared region's header"
        );
        assert_eq!(kind(pool.translate(0x0900_0FFC)), dev);
        assert_eq!(pool.translate(0x090C_0000), None, "B's UART");
        assert_eq!(pool.translate(0x0800_0000), None, "the distributor traps");
        // Cores 0-2: SGI_base mapped, RD_base emulated (no LPIs; core 2's
        // must say it is the last); core 3 (B's): nothing.
        for core in 0..3 {
            let rd = MACHINE.rd_base(core);
            assert_eq!(pool.translate(rd + 8), None, "core {core}'s RD_base traps");
            assert_eq!(kind(pool.translate(rd + GICR_FRAME + 0x100)), dev);
            assert_eq!(MACHINE.rd_frame(&a, rd + 0x70), Some((rd, core == 2)));
        }
        let rd2 = MACHINE.rd_base(2);
        assert_eq!(MACHINE.boundary_frame(&a), Some(rd2));
        assert_eq!(pool.translate(MACHINE.rd_base(3)), None);
        assert_eq!(pool.translate(MACHINE.rd_base(3) + GICR_FRAME), None);
        assert_eq!(MACHINE.rd_frame(&a, MACHINE.rd_base(3)), None, "B's");
        assert_eq!(MACHINE.rd_frame(&a, rd2 + GICR_FRAME), None, "SGI_base");
    }

    #[test]
    fn the_machines_last_core_needs_no_emulated_frame() {
        let ram = Span {
            base: 0x6000_0000,
            size: 0x1FC0_0000,
        };
        let b = partition(0b1000, ram, 0x090C_0000);
        assert_eq!(MACHINE.boundary_frame(&b), None);
        let mut pages = vec![Page::EMPTY; 16];
        let mut pool = Pool::new(&mut pages, 0x7FC8_0000).unwrap();
        stage2(&mut pool, &MACHINE, &b).unwrap();
        assert_eq!(pool.translate(MACHINE.rd_base(3)), None, "emulated");
        assert!(pool.translate(MACHINE.rd_base(3) + GICR_FRAME).is_some());
        assert_eq!(
            MACHINE.rd_frame(&b, MACHINE.rd_base(3) + 8),
            Some((MACHINE.rd_base(3), false))
        );
        assert_eq!(pool.translate(MACHINE.rd_base(2)), None);
        assert_eq!(pool.translate(0x7FE0_0000), None, "no shared region");
        assert_eq!(pool.translate(0x4000_0000), None, "A's RAM");
    }

    /// Partitions A (cores 0-2, Tandem's driver) and B (core 3, the region
    /// without the driver), as `configs/dualunix.toml`.
    fn dualunix() -> (Partition, Partition) {
        use tandem_abi::partition::{FLAG_SHARED_REGION, FLAG_TANDEM};
        let mut a = partition(
            0b0111,
            Span {
                base: 0x4000_0000,
                size: 0x2000_0000,
            },
            0x0900_0000,
        );
        a.flags = FLAG_SHARED_REGION | FLAG_TANDEM;
        let mut b = partition(
            0b1000,
            Span {
                base: 0x6000_0000,
                size: 0x1FC0_0000,
            },
            0x090C_0000,
        );
        b.flags = FLAG_SHARED_REGION;
        (a, b)
    }

    /// What partition `p` gets at offset `offset` of the shared region.
    fn shared_kind(p: &Partition, offset: usize) -> Option<u64> {
        let mut pages = vec![Page::EMPTY; 16];
        let mut pool = Pool::new(&mut pages, 0x7FC8_0000).unwrap();
        stage2(&mut pool, &MACHINE, p).unwrap();
        kind(pool.translate(MACHINE.shared.base + offset as u64))
    }

    #[test]
    fn each_partition_maps_its_own_cores_parts_of_the_shared_region_only() {
        let (a, b) = dualunix();
        let rw = Some(Kind::GuestShared.attributes());
        for kind in layout::PER_CORE {
            for core in 0..4 {
                let (own, other) = if core < 3 { (&a, &b) } else { (&b, &a) };
                let first = kind.of(core);
                let last = first + kind.stride - 4;
                for at in [first, last] {
                    assert_eq!(shared_kind(own, at), rw, "{} of core {core}", kind.name);
                    assert_eq!(
                        shared_kind(other, at),
                        None,
                        "{} of core {core}: not the other's",
                        kind.name
                    );
                }
            }
            // Cores the machine lacks: nobody's.
            assert_eq!(shared_kind(&a, kind.of(4)), None);
            assert_eq!(shared_kind(&b, kind.of(7)), None);
        }
    }

    #[test]
    fn the_header_is_read_only_the_mailbox_shared_the_stub_nobodys() {
        let (a, b) = dualunix();
        let ro = Some(Kind::GuestSharedReadOnly.attributes());
        let rw = Some(Kind::GuestShared.attributes());
        for p in [&a, &b] {
            assert_eq!(shared_kind(p, 0), ro);
            assert_eq!(shared_kind(p, layout::PAGE - 4), ro);
            assert_eq!(shared_kind(p, layout::PARTITION_MAILBOX_OFFSET), rw);
            assert_eq!(shared_kind(p, layout::LINUX_STUB_OFFSET), None);
            assert_eq!(shared_kind(p, layout::LAYOUT_BYTES - 4), None);
            assert_eq!(shared_kind(p, layout::RPMSG_END), None, "unused");
            assert_eq!(shared_kind(p, 0x3_1000), None, "unused");
        }
        // Read-only in the descriptor's terms: S2AP = 0b01 (read, no write).
        assert_eq!(Kind::GuestSharedReadOnly.attributes() >> 6 & 0b11, 0b01);
        assert_eq!(Kind::GuestShared.attributes() >> 6 & 0b11, 0b11);
    }

    #[test]
    fn only_the_partition_with_tandems_driver_maps_the_rpc_channels_and_ctxsw() {
        let (a, b) = dualunix();
        let rw = Some(Kind::GuestShared.attributes());
        let (offset, length) = layout::TANDEM_PARTS;
        for at in [
            layout::CTXSW_OFFSET,
            layout::rpc_channel_offset(0),
            layout::rpc_response_offset(2),
            layout::rpc_data_offset(3),
            // RPMsg's resource table, vrings and buffers: Tandem's too.
            layout::RPMSG_OFFSET,
            layout::rpmsg_vring_offset(1),
            layout::RPMSG_POOL_OFFSET,
            offset + length - 4,
        ] {
            assert_eq!(shared_kind(&a, at), rw, "{at:#x}");
            assert_eq!(shared_kind(&b, at), None, "{at:#x}");
        }
        // Without the region: nothing of it at all.
        let mut c = b;
        c.flags = 0;
        assert_eq!(shared_kind(&c, 0), None);
        assert_eq!(shared_kind(&c, layout::PARTITION_MAILBOX_OFFSET), None);
        assert_eq!(shared_kind(&c, layout::CORE_RECORDS.of(3)), None);
    }

    #[test]
    fn a_region_smaller_than_the_layout_is_refused() {
        let (a, _) = dualunix();
        let small = Machine {
            shared: Span {
                base: 0x7FE0_0000,
                size: 0x10_0000,
            },
            ..MACHINE
        };
        let mut pages = vec![Page::EMPTY; 16];
        let mut pool = Pool::new(&mut pages, 0x7FC8_0000).unwrap();
        assert_eq!(
            stage2(&mut pool, &small, &a),
            Err(MapError::Range(0x7FE0_0000))
        );
    }

    #[test]
    fn the_layer_maps_itself_the_gic_and_the_consoles() {
        let image = Image {
            ram: Span {
                base: 0x7FC0_0000,
                size: 0x20_0000,
            },
            text_end: 0x7FC0_8000,
        };
        let mut pages = vec![Page::EMPTY; 8];
        let mut pool = Pool::new(&mut pages, 0x7FC4_0000).unwrap();
        let consoles = [Span {
            base: 0x0900_0000,
            size: 0x1000,
        }];
        stage1(&mut pool, &MACHINE, &image, consoles.into_iter()).unwrap();
        assert_eq!(
            kind(pool.translate(0x7FC0_0000)),
            Some(Kind::HypCode.attributes())
        );
        assert_eq!(
            kind(pool.translate(0x7FC0_8000)),
            Some(Kind::HypData.attributes())
        );
        assert_eq!(
            kind(pool.translate(0x7FDF_F000)),
            Some(Kind::HypData.attributes())
        );
        assert_eq!(pool.translate(0x7FE0_0000), None);
        assert_eq!(pool.translate(0x4000_0000), None, "no partition's RAM");
        let dev = Some(Kind::HypDevice.attributes());
        assert_eq!(kind(pool.translate(0x0800_FFFC)), dev);
        assert_eq!(kind(pool.translate(MACHINE.rd_base(3) + 0x1_FFFC)), dev);
        assert_eq!(pool.translate(MACHINE.rd_base(4)), None);
        assert_eq!(kind(pool.translate(0x0900_0000)), dev);
    }
}
