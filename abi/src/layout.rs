//! Where every part of the shared region lies, and whose it is: the one
//! place that computes an offset in it. The records themselves are in
//! [`crate::shm`] (header, per-core record, trace entry, stolen time,
//! context-switch record) and [`crate::rpc`] (the channels' request and
//! response); both take their offsets from here and this module takes
//! nothing from them, so the region's layout is in one place.
//!
//! ```text
//! 0x000000 header (one page, read-only to every partition)
//! 0x001000 core records, one page per core (8)
//! 0x009000 trace rings, 5 pages per core (64 B header + 1024 x 16 B entries)
//! 0x040000 latency histograms, 16 pages per core (16384 u32 buckets)
//! 0x0C0000 Linux spin-wait histograms, 4 pages per core (4096 u32 buckets)
//! 0x0E0000 RTOS dispatch histograms, 4 pages per core (4096 u32 buckets)
//! 0x100000 stolen-time records (Arm PV time, DEN0057A), one page per core
//! 0x108000 context-switch record (the `ctxsw` workload), up to 0x10FFFF
//! 0x110000 RPC channels, 0x11000 bytes each (4)
//! 0x154000 RPMsg: the resource table's page, then vring 0 and vring 1
//!          (3 pages each), then at 0x160000 the buffer pool (256 KiB)
//! 0x1FE000 the partitions' mailbox (a page the secure side never touches)
//! 0x1FF000 the stub Linux's cores start through (the monitor's)
//! ```
//!
//! Whose each page is ([`owner`]) decides what a partition of the normal
//! world maps (the EL2 layer's stage 2, `hyp/core/src/maps.rs`): the
//! header read-only; its own cores' parts (every part a core has lies on
//! pages of that core alone, so one partition's cores share no page with
//! another's); the context-switch record and the RPC channels only with
//! Tandem's driver (`partition::FLAG_TANDEM`), and so is RPMsg's part
//! (its resource table, vrings and buffers); the mailbox, the one page
//! partitions share on purpose; never the stub.

use crate::CConstant;
use crate::MAX_CORES;

/// Bytes of a page: the unit a stage 2 maps, so the unit of ownership.
pub const PAGE: usize = 0x1000;
/// Bytes the layout spans (the board's region may not be smaller).
pub const LAYOUT_BYTES: usize = 0x20_0000;

/// `n` rounded up to whole pages.
const fn pages(n: usize) -> usize {
    n.div_ceil(PAGE) * PAGE
}

/// Bytes of the header's page.
pub const HEADER_BYTES: usize = PAGE;

/// One kind of part every core has, the cores' side by side: core `c`'s
/// lies at `offset + c * stride`, in `stride` bytes of whole pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerCore {
    /// What it is (for messages and tests).
    pub name: &'static str,
    /// Core 0's.
    pub offset: usize,
    /// Bytes from one core's to the next (whole pages).
    pub stride: usize,
}

impl PerCore {
    /// Offset of `core`'s.
    pub const fn of(&self, core: usize) -> usize {
        self.offset + core * self.stride
    }

    /// The bytes cores `first .. first + count` have of this kind: one
    /// range (offset, length), the cores being side by side.
    pub const fn span(&self, first: usize, count: usize) -> (usize, usize) {
        (self.of(first), count * self.stride)
    }

    /// One past the last core's.
    pub const fn end(&self) -> usize {
        self.of(MAX_CORES)
    }
}

/// Bytes of one core's record ([`crate::shm::CoreRecord`] is smaller).
pub const CORE_RECORD_STRIDE: usize = PAGE;
/// The per-core records.
pub const CORE_RECORDS: PerCore = PerCore {
    name: "record",
    offset: HEADER_BYTES,
    stride: CORE_RECORD_STRIDE,
};

/// Entries per trace ring (a power of two).
pub const TRACE_ENTRIES: u32 = 1024;
/// Bytes of a trace ring's header (`written`, then padding to a cache line).
pub const TRACE_RING_HEADER: u32 = 64;
/// Bytes of one trace entry ([`crate::shm::TraceEntry`]).
pub const TRACE_ENTRY_SIZE: usize = 16;
/// Bytes from one trace ring to the next: its header and entries, in whole
/// pages.
pub const TRACE_RING_STRIDE: usize =
    pages(TRACE_RING_HEADER as usize + TRACE_ENTRIES as usize * TRACE_ENTRY_SIZE);
/// The world-switch trace rings.
pub const TRACE_RINGS: PerCore = PerCore {
    name: "trace",
    offset: CORE_RECORDS.end(),
    stride: TRACE_RING_STRIDE,
};

/// Buckets per core of the latency histogram: bucket `n` counts latencies
/// of `n` counter ticks; the last one counts everything at or beyond it.
pub const LATENCY_BUCKETS: u32 = 16384;
/// The RTOS's interrupt-latency histograms (u32 buckets, each written by
/// the RTOS on its core only).
pub const LATENCY: PerCore = PerCore {
    name: "latency",
    offset: 0x4_0000,
    stride: pages(LATENCY_BUCKETS as usize * 4),
};

/// Buckets per core of the spin-wait histogram; the last counts everything
/// at or beyond it.
pub const SPIN_BUCKETS: u32 = 4096;
/// Linux's spin-wait histograms (written by Linux on that core, when booted
/// with `tandem_spinstat=on`).
pub const SPIN: PerCore = PerCore {
    name: "spin",
    offset: 0xC_0000,
    stride: pages(SPIN_BUCKETS as usize * 4),
};

/// Buckets per core of the dispatch histogram: bucket `n` counts dispatches
/// taking `n` counter ticks from the activation request to the task's first
/// instruction.
pub const DISPATCH_BUCKETS: u32 = 4096;
/// The RTOS's dispatch-latency histograms (counted on the core the task
/// starts on).
pub const DISPATCH: PerCore = PerCore {
    name: "dispatch",
    offset: 0xE_0000,
    stride: pages(DISPATCH_BUCKETS as usize * 4),
};

/// Bytes of one stolen-time record (DEN0057A fixes 64).
pub const STEAL_RECORD_SIZE: u32 = 64;
/// The stolen-time records, a page each: a partition maps its own cores'.
pub const STEAL: PerCore = PerCore {
    name: "steal",
    offset: 0x10_0000,
    stride: PAGE,
};

/// Every kind of per-core part, in the region's order.
pub const PER_CORE: [PerCore; 6] = [CORE_RECORDS, TRACE_RINGS, LATENCY, SPIN, DISPATCH, STEAL];

/// Where the context-switch record lies (the `ctxsw` workload; up to the
/// RPC channels is kept for it).
pub const CTXSW_OFFSET: usize = 0x10_8000;

/// Where the RPC channels start.
pub const RPC_OFFSET: usize = 0x11_0000;
/// Number of RPC channels.
pub const RPC_CHANNELS: u32 = 4;
/// Most data bytes one call carries.
pub const RPC_MAX_DATA: u32 = 64 * 1024;
/// Bytes of a channel before its data (request, response, padding to a page).
pub const RPC_CONTROL_SIZE: u32 = 0x1000;
/// Offset of the response inside a channel.
pub const RPC_RESPONSE: u32 = 64;
/// Bytes from one channel to the next.
pub const RPC_CHANNEL_SIZE: u32 = RPC_CONTROL_SIZE + RPC_MAX_DATA;

/// Offset of channel `ch` (its request).
pub const fn rpc_channel_offset(ch: usize) -> usize {
    RPC_OFFSET + ch * RPC_CHANNEL_SIZE as usize
}

/// Offset of channel `ch`'s response.
pub const fn rpc_response_offset(ch: usize) -> usize {
    rpc_channel_offset(ch) + RPC_RESPONSE as usize
}

/// Offset of channel `ch`'s data.
pub const fn rpc_data_offset(ch: usize) -> usize {
    rpc_channel_offset(ch) + RPC_CONTROL_SIZE as usize
}

/// Where RPMsg's part starts (its contents: the rpmsg module): the page of its resource
/// table and control words, right after the RPC channels.
pub const RPMSG_OFFSET: usize = rpc_channel_offset(RPC_CHANNELS as usize);
/// Entries of each of RPMsg's two vrings (a power of two). Linux's
/// virtio-rpmsg makes twice as many buffers (one ring's worth each way),
/// at most 512 of them.
pub const RPMSG_VRING_NUM: u32 = 256;
/// Alignment of a vring's used ring (`fw_rsc_vdev_vring.align`).
pub const RPMSG_VRING_ALIGN: u32 = PAGE as u32;

/// Bytes of a split vring of `num` entries whose used ring is aligned to
/// `align` (Linux's `vring_size()`): descriptors (16 B each), the
/// available ring (flags, index, `num` entries, used event), then aligned
/// the used ring (flags, index, `num` 8-byte elements, avail event).
pub const fn vring_bytes(num: usize, align: usize) -> usize {
    let avail_end = 16 * num + 2 * (3 + num);
    avail_end.div_ceil(align) * align + 2 * 3 + 8 * num
}

/// Bytes from one of RPMsg's vrings to the next: a vring in whole pages.
pub const RPMSG_VRING_STRIDE: usize = pages(vring_bytes(
    RPMSG_VRING_NUM as usize,
    RPMSG_VRING_ALIGN as usize,
));

/// Offset of RPMsg's vring `i` (0: Linux's receive ring, 1: its send
/// ring), after the resource table's page.
pub const fn rpmsg_vring_offset(i: usize) -> usize {
    RPMSG_OFFSET + PAGE + i * RPMSG_VRING_STRIDE
}

/// Bytes of one RPMsg buffer (Linux 6.1's `MAX_RPMSG_BUF_SIZE`).
pub const RPMSG_BUFFER_SIZE: u32 = 512;
/// Where RPMsg's buffer pool starts (Linux's `vdev0buffer` carveout, from
/// which virtio-rpmsg allocates every buffer of both rings).
pub const RPMSG_POOL_OFFSET: usize = 0x16_0000;
/// Bytes of the buffer pool: a buffer per entry of each ring.
pub const RPMSG_POOL_BYTES: usize = 2 * RPMSG_VRING_NUM as usize * RPMSG_BUFFER_SIZE as usize;
/// One past RPMsg's part.
pub const RPMSG_END: usize = RPMSG_POOL_OFFSET + RPMSG_POOL_BYTES;

/// The parts only the partition with Tandem's driver has, as one range
/// (offset, length): the context-switch record, the RPC channels and
/// RPMsg's part.
pub const TANDEM_PARTS: (usize, usize) = (CTXSW_OFFSET, RPMSG_END - CTXSW_OFFSET);

/// A page the normal world's partitions may use to talk to each other (the
/// harness's experiments hand load phases over it): the one page every
/// partition with the region maps read/write, on purpose. The monitor and
/// the RTOS neither read nor write it.
pub const PARTITION_MAILBOX_OFFSET: usize = 0x1F_E000;

/// Where the monitor puts the stub Linux starts through on every start of a
/// core (`monitor/firmware/src/entry.rs`): the last page of the region. No
/// partition maps it.
pub const LINUX_STUB_OFFSET: usize = 0x1F_F000;

/// Bytes the per-core parts take for `cores` cores, from the region's
/// start: the secure side clears them at boot.
pub const fn region_bytes(cores: usize) -> usize {
    STEAL.of(cores)
}

// The parts in order, none overlapping the next, all in the region.
const _: () = assert!(CORE_RECORDS.end() <= TRACE_RINGS.offset);
const _: () = assert!(TRACE_RINGS.end() <= LATENCY.offset);
const _: () = assert!(LATENCY.end() <= SPIN.offset);
const _: () = assert!(SPIN.end() <= DISPATCH.offset);
const _: () = assert!(DISPATCH.end() <= STEAL.offset);
const _: () = assert!(STEAL.end() <= CTXSW_OFFSET);
const _: () = assert!(CTXSW_OFFSET + PAGE <= RPC_OFFSET);
const _: () = assert!(rpmsg_vring_offset(2) <= RPMSG_POOL_OFFSET);
const _: () = assert!(RPMSG_POOL_OFFSET.is_multiple_of(PAGE));
const _: () = assert!(RPMSG_VRING_NUM.is_power_of_two() && RPMSG_VRING_NUM <= 256);
const _: () = assert!(TANDEM_PARTS.0 + TANDEM_PARTS.1 <= PARTITION_MAILBOX_OFFSET);
const _: () = assert!(PARTITION_MAILBOX_OFFSET + PAGE <= LINUX_STUB_OFFSET);
const _: () = assert!(LINUX_STUB_OFFSET + PAGE == LAYOUT_BYTES);

/// Whose a page of the region is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The header: everyone reads it, the secure side alone writes it.
    Header,
    /// One core's part (its record, trace ring, histograms, stolen time).
    Core(usize),
    /// The partition with Tandem's driver (context-switch record, RPC
    /// channels).
    Tandem,
    /// Every partition with the region: the mailbox.
    Mailbox,
    /// The monitor's stub: nobody in the normal world.
    Stub,
    /// Nothing lies there.
    Unused,
}

/// Whose the byte at `offset` is (every byte of a page has one owner).
pub fn owner(offset: usize) -> Owner {
    if offset < HEADER_BYTES {
        return Owner::Header;
    }
    for kind in PER_CORE {
        if (kind.offset..kind.end()).contains(&offset) {
            return Owner::Core((offset - kind.offset) / kind.stride);
        }
    }
    let (tandem, length) = TANDEM_PARTS;
    if (tandem..tandem + length).contains(&offset) {
        Owner::Tandem
    } else if (PARTITION_MAILBOX_OFFSET..PARTITION_MAILBOX_OFFSET + PAGE).contains(&offset) {
        Owner::Mailbox
    } else if (LINUX_STUB_OFFSET..LAYOUT_BYTES).contains(&offset) {
        Owner::Stub
    } else {
        Owner::Unused
    }
}

macro_rules! constant {
    ($name:literal, $value:expr) => {
        CConstant {
            name: $name,
            value: $value as i64,
        }
    };
}

pub(crate) const C_CONSTANTS: &[CConstant] = &[
    constant!("SHM_PAGE", PAGE),
    constant!("SHM_LAYOUT_BYTES", LAYOUT_BYTES),
    constant!("SHM_HEADER_BYTES", HEADER_BYTES),
    constant!("SHM_CORE_RECORDS_OFFSET", CORE_RECORDS.offset),
    constant!("SHM_CORE_RECORD_STRIDE", CORE_RECORDS.stride),
    constant!("TRACE_OFFSET", TRACE_RINGS.offset),
    constant!("TRACE_RING_STRIDE", TRACE_RINGS.stride),
    constant!("TRACE_ENTRIES", TRACE_ENTRIES),
    constant!("TRACE_RING_HEADER", TRACE_RING_HEADER),
    constant!("LATENCY_OFFSET", LATENCY.offset),
    constant!("LATENCY_STRIDE", LATENCY.stride),
    constant!("LATENCY_BUCKETS", LATENCY_BUCKETS),
    constant!("SPIN_OFFSET", SPIN.offset),
    constant!("SPIN_STRIDE", SPIN.stride),
    constant!("SPIN_BUCKETS", SPIN_BUCKETS),
    constant!("DISPATCH_OFFSET", DISPATCH.offset),
    constant!("DISPATCH_STRIDE", DISPATCH.stride),
    constant!("DISPATCH_BUCKETS", DISPATCH_BUCKETS),
    constant!("STEAL_OFFSET", STEAL.offset),
    constant!("STEAL_STRIDE", STEAL.stride),
    constant!("STEAL_RECORD_SIZE", STEAL_RECORD_SIZE),
    constant!("CTXSW_OFFSET", CTXSW_OFFSET),
    constant!("SHM_TANDEM_PARTS_OFFSET", TANDEM_PARTS.0),
    constant!("SHM_TANDEM_PARTS_BYTES", TANDEM_PARTS.1),
    constant!("SHM_PARTITION_MAILBOX_OFFSET", PARTITION_MAILBOX_OFFSET),
    constant!("SHM_LINUX_STUB_OFFSET", LINUX_STUB_OFFSET),
    constant!("RPC_OFFSET", RPC_OFFSET),
    constant!("RPC_CHANNELS", RPC_CHANNELS),
    constant!("RPC_MAX_DATA", RPC_MAX_DATA),
    constant!("RPC_CONTROL_SIZE", RPC_CONTROL_SIZE),
    constant!("RPC_CHANNEL_SIZE", RPC_CHANNEL_SIZE),
    constant!("RPC_RESPONSE", RPC_RESPONSE),
    constant!("RPMSG_OFFSET", RPMSG_OFFSET),
    constant!("RPMSG_VRING_NUM", RPMSG_VRING_NUM),
    constant!("RPMSG_VRING_ALIGN", RPMSG_VRING_ALIGN),
    constant!("RPMSG_VRING_STRIDE", RPMSG_VRING_STRIDE),
    constant!("RPMSG_VRING0_OFFSET", rpmsg_vring_offset(0)),
    constant!("RPMSG_VRING1_OFFSET", rpmsg_vring_offset(1)),
    constant!("RPMSG_BUFFER_SIZE", RPMSG_BUFFER_SIZE),
    constant!("RPMSG_POOL_OFFSET", RPMSG_POOL_OFFSET),
    constant!("RPMSG_POOL_BYTES", RPMSG_POOL_BYTES),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_part_is_whole_pages_of_its_core_alone() {
        for kind in PER_CORE {
            assert_eq!(kind.offset % PAGE, 0, "{}", kind.name);
            assert_eq!(kind.stride % PAGE, 0, "{}", kind.name);
            for core in 0..MAX_CORES {
                let at = kind.of(core);
                for page in (at..at + kind.stride).step_by(PAGE) {
                    assert_eq!(owner(page), Owner::Core(core), "{} {core}", kind.name);
                    assert_eq!(owner(page + PAGE - 1), Owner::Core(core));
                }
            }
        }
        assert_eq!(CORE_RECORDS.of(1), 0x2000);
        assert_eq!(TRACE_RINGS.of(0), 0x9000);
        assert_eq!(TRACE_RING_STRIDE, 0x5000);
        assert_eq!(TRACE_RINGS.end(), 0x3_1000);
        assert_eq!(STEAL.of(3), 0x10_3000);
        assert_eq!(region_bytes(4), 0x10_4000);
        assert_eq!(SPIN.span(1, 2), (0xC_4000, 0x8000));
    }

    #[test]
    fn the_rest_of_the_region_is_the_headers_tandems_the_mailbox_or_the_stub() {
        assert_eq!(owner(0), Owner::Header);
        assert_eq!(owner(0xFFF), Owner::Header);
        assert_eq!(owner(CTXSW_OFFSET), Owner::Tandem);
        assert_eq!(
            owner(rpc_data_offset(3) + RPC_MAX_DATA as usize - 1),
            Owner::Tandem
        );
        assert_eq!(owner(rpc_channel_offset(4)), Owner::Tandem, "RPMsg's");
        assert_eq!(owner(RPMSG_END - 1), Owner::Tandem);
        assert_eq!(owner(RPMSG_END), Owner::Unused);
        assert_eq!(owner(PARTITION_MAILBOX_OFFSET + 8), Owner::Mailbox);
        assert_eq!(owner(LINUX_STUB_OFFSET), Owner::Stub);
        assert_eq!(owner(LAYOUT_BYTES - 1), Owner::Stub);
        assert_eq!(owner(0x3_1000), Owner::Unused, "after the trace rings");
        assert_eq!(rpc_channel_offset(0), 0x11_0000);
        assert_eq!(rpc_data_offset(1), 0x12_2000);
        assert_eq!(rpc_response_offset(3), 0x14_3040);
    }

    #[test]
    fn rpmsg_lies_after_the_rpc_channels_as_linux_sizes_its_vrings() {
        // Linux's vring_size(256, 4096): 8192 for the descriptors and the
        // available ring, aligned, then 6 + 8 * 256 for the used ring.
        assert_eq!(vring_bytes(256, 4096), 10_246);
        assert_eq!(RPMSG_OFFSET, 0x15_4000);
        assert_eq!(RPMSG_VRING_STRIDE, 0x3000);
        assert_eq!(rpmsg_vring_offset(0), 0x15_5000);
        assert_eq!(rpmsg_vring_offset(1), 0x15_8000);
        assert_eq!(RPMSG_POOL_BYTES, 0x4_0000);
        assert_eq!(RPMSG_END, 0x1A_0000);
        assert_eq!(TANDEM_PARTS, (0x10_8000, 0x9_8000));
    }
}
