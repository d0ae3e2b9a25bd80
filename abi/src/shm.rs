//! The records of the shared region: a versioned header written by the
//! secure side at boot, per-core records, world-switch trace entries,
//! stolen-time records and the context-switch record. Linux maps the region
//! and validates the header. The secure side writes its fields at offsets
//! fixed by [`crate::layout`] (never taken from the region, which Linux
//! could rewrite) and validates anything it reads back. The offsets are
//! re-exported here under the names the firmware uses.

use crate::CConstant;
use crate::layout::{self, CORE_RECORDS, DISPATCH, LATENCY, SPIN, STEAL, TRACE_RINGS};
pub use crate::layout::{
    DISPATCH_BUCKETS, LATENCY_BUCKETS, STEAL_RECORD_SIZE, TRACE_ENTRIES, TRACE_RING_HEADER,
    region_bytes,
};

/// `"TNDM"` read as a little-endian u32.
pub const MAGIC: u32 = u32::from_le_bytes(*b"TNDM");

/// Size of one per-core record: whole cache lines (each core's record has a
/// page of its own, [`layout::CORE_RECORD_STRIDE`]).
pub const CORE_RECORD_SIZE: u32 = 128;
/// Bytes from one core's record to the next.
pub const CORE_RECORD_STRIDE: u32 = layout::CORE_RECORD_STRIDE as u32;

/// The header at offset 0 of the shared region.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: u32,
    /// [`crate::smc::ABI_VERSION`] of the writer.
    pub abi_version: u32,
    /// Size of the whole region in bytes.
    pub region_size: u32,
    /// Size of this header in bytes.
    pub header_size: u32,
    /// Number of per-core records.
    pub core_count: u32,
    /// Size of one per-core record.
    pub core_record_size: u32,
    /// Offset of the first per-core record from the start of the region.
    pub core_records_offset: u32,
    /// Incremented by the monitor on every boot of the machine.
    pub boot_count: u32,
    /// Offset of the first trace ring.
    pub trace_offset: u32,
    /// Bytes from one trace ring to the next.
    pub trace_ring_size: u32,
    /// Entries per trace ring.
    pub trace_entries: u32,
    /// Frequency of the counter all times here are in (ticks per second).
    pub counter_hz: u32,
    /// Which Linux runs: 1 from cold boot, one more each time the monitor
    /// restarts Linux alone (its reboot, power-off policy or panic); the
    /// RTOS runs on across them.
    pub linux_generation: u32,
    /// Bytes from one core's record to the next (whole pages: a partition
    /// of the normal world maps its own cores' only).
    pub core_record_stride: u32,
}

/// Per-core record (two cache lines). Written by the secure side, except the
/// two Linux lock-state words, which Linux on that core writes (and the RTOS
/// reads as untrusted input).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreRecord {
    /// Counter ticks the RTOS ran on this core (RTOS).
    pub rtos_busy: u64,
    /// Periodic jobs released on this core (RTOS).
    pub rtos_releases: u64,
    /// Jobs still running when their next release came (RTOS).
    pub deadline_misses: u64,
    /// Linux -> RTOS world switches (monitor).
    pub switches_to_rtos: u64,
    /// RTOS -> Linux world switches (monitor).
    pub switches_to_linux: u64,
    /// The core's policy (`boot::Policy` as u32; monitor).
    pub policy: u32,
    /// Raw spin locks and rwlocks Linux holds on this core (nesting count;
    /// Linux, when booted with `tandem_lockstate=on`).
    pub linux_lock_held: u32,
    /// Lock acquisitions Linux is spinning on here (Linux, as above).
    pub linux_lock_waiting: u32,
    /// Dispatches of the measured periodic task that another core handed
    /// to this one with a reschedule SGI (RTOS).
    pub dispatch_handoffs: u32,
    /// Longest of their waits, in counter ticks, from the SGI's sending to
    /// this core's RTOS interrupt entry (RTOS). Not part of the dispatch
    /// histogram, which counts the RTOS's own path.
    pub dispatch_handoff_wait_max: u32,
    /// Sum of those waits, in counter ticks, wrapping (RTOS).
    pub dispatch_handoff_wait_sum: u32,
    /// Jobs of the measured periodic task that started on this core
    /// (RTOS; wrapping).
    pub dispatch_starts: u32,
    /// Of those, the jobs that preempted Linux here while it held a spin
    /// lock or rwlock, as Linux had published (RTOS; wrapping).
    pub dispatch_preempted_holding: u32,
    /// Of those, the jobs that preempted Linux here while it held none but
    /// was spinning for one (RTOS; wrapping).
    pub dispatch_preempted_waiting: u32,
    /// Accesses of Linux's that trapped to EL3 and were refused with an
    /// Undefined Instruction exception, such as the GIC's Group 0
    /// registers (monitor; wrapping; never logged: docs/security.md).
    pub monitor_refused_traps: u32,
    /// Times this core's monitor woke from waiting for an interrupt and
    /// found nothing to do (monitor; wrapping): an interrupt nobody takes
    /// would keep it spinning.
    pub monitor_idle_wakeups: u32,
    /// PSCI CPU_OFFs of this core Linux made (monitor; wrapping).
    pub monitor_cpu_offs: u32,
    /// Reserved: the record's size stays whole cache lines.
    pub reserved: [u32; 10],
}

/// One world switch in a trace ring.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceEntry {
    /// Counter value at the switch.
    pub time: u64,
    /// [`TRACE_TO_RTOS`], [`TRACE_TO_LINUX`] or [`TRACE_TO_IDLE`].
    pub event: u64,
}

/// Trace event: the core went from Linux (or idle) to the RTOS.
pub const TRACE_TO_RTOS: u64 = 1;
/// Trace event: the core went from the RTOS to Linux.
pub const TRACE_TO_LINUX: u64 = 2;
/// Trace event: the core went idle (no world has work; monitor waits).
pub const TRACE_TO_IDLE: u64 = 3;

/// Where the trace rings start.
pub const TRACE_OFFSET: u32 = TRACE_RINGS.offset as u32;
/// Bytes from one trace ring to the next (its header and entries, in whole
/// pages).
pub const TRACE_RING_SIZE: u32 = TRACE_RINGS.stride as u32;

const _: () = assert!(core::mem::size_of::<CoreRecord>() == CORE_RECORD_SIZE as usize);
const _: () = assert!(CORE_RECORD_SIZE <= CORE_RECORD_STRIDE);
const _: () = assert!(core::mem::size_of::<TraceEntry>() == layout::TRACE_ENTRY_SIZE);

/// Offset of `core`'s record.
pub const fn core_record_offset(core: usize) -> usize {
    CORE_RECORDS.of(core)
}

/// Offset of `core`'s trace ring (its `written` count comes first).
pub const fn trace_ring_offset(core: usize) -> usize {
    TRACE_RINGS.of(core)
}

/// Offset of entry `n` (counted from the start of time) of `core`'s ring.
pub const fn trace_entry_offset(core: usize, n: u64) -> usize {
    trace_ring_offset(core)
        + TRACE_RING_HEADER as usize
        + (n % TRACE_ENTRIES as u64) as usize * core::mem::size_of::<TraceEntry>()
}

/// Offset of `core`'s latency histogram (`LATENCY_BUCKETS` u32 counters,
/// written by the RTOS on that core only).
pub const fn latency_offset(core: usize) -> usize {
    LATENCY.of(core)
}

/// Buckets per core of the spin-wait histogram; the last counts everything
/// at or beyond it.
pub const SPIN_BUCKETS: u32 = layout::SPIN_BUCKETS;
/// A spin wait of `t` counter ticks is counted in bucket `t >> SPIN_SHIFT`
/// (64 ticks, 1.024 µs at 62.5 MHz; a shift keeps division out of the lock path).
pub const SPIN_SHIFT: u32 = 6;

/// Offset of `core`'s spin-wait histogram (written by Linux on that core,
/// when booted with `tandem_spinstat=on`).
pub const fn spin_offset(core: usize) -> usize {
    SPIN.of(core)
}

/// Offset of `core`'s dispatch histogram (counted on the core the task starts on).
pub const fn dispatch_offset(core: usize) -> usize {
    DISPATCH.of(core)
}

const _: () = assert!(core::mem::size_of::<StolenTime>() == STEAL_RECORD_SIZE as usize);

/// Arm PV time's stolen-time structure (DEN0057A table 3), one per core,
/// written by the monitor only. Linux maps the one PV_TIME_ST names and reads
/// `stolen_time`; a revision or attributes other than 0 make it refuse.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StolenTime {
    /// Structure revision: 0.
    pub revision: u32,
    /// Attributes: 0.
    pub attributes: u32,
    /// Nanoseconds the RTOS held this core while Linux had work here; only
    /// ever grows, written with one 64-bit store.
    pub stolen_time: u64,
    /// Padding to 64 bytes (zero).
    pub reserved: [u64; 6],
}

/// Offset of `core`'s stolen-time record (a page of its own).
pub const fn steal_offset(core: usize) -> usize {
    STEAL.of(core)
}

/// Where the context-switch record lies (the `ctxsw` workload).
pub const CTXSW_OFFSET: u32 = layout::CTXSW_OFFSET as u32;

const _: () = assert!(core::mem::size_of::<CtxswRecord>() <= layout::PAGE);

/// [`CtxswRecord::state`]: the hand-offs have not started.
pub const CTXSW_IDLE: u32 = 0;
/// [`CtxswRecord::state`]: hand-offs running.
pub const CTXSW_RUNNING: u32 = 1;
/// [`CtxswRecord::state`]: all hand-offs done; the times are final.
pub const CTXSW_DONE: u32 = 2;
/// [`CtxswRecord::mode`]: each protected task has its own ASID; a switch
/// writes TTBR0 only.
pub const CTXSW_ASID: u32 = 0;
/// [`CtxswRecord::mode`]: one ASID for all, the TLB invalidated on every
/// switch.
pub const CTXSW_FLUSH: u32 = 1;

/// What the RTOS's `ctxsw` workload measured (written by the RTOS only;
/// Linux reads it). Times are counter ticks.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtxswRecord {
    /// [`CTXSW_IDLE`], [`CTXSW_RUNNING`] or [`CTXSW_DONE`], written last.
    pub state: u32,
    /// [`CTXSW_ASID`] or [`CTXSW_FLUSH`].
    pub mode: u32,
    /// Pages each task writes between two hand-offs.
    pub pages: u32,
    /// Hand-offs per batch in `best_batch_ticks`.
    pub batch: u32,
    /// Hand-offs done.
    pub switches: u64,
    /// Ticks from the first hand-off to the last.
    pub ticks: u64,
    /// Fewest ticks any batch of `batch` hand-offs took (one with no
    /// interrupt in it).
    pub best_batch_ticks: u64,
    /// Protected tasks stopped for a stray access.
    pub faults: u32,
    /// Task ID of the last one.
    pub fault_task: u32,
    /// The address it touched (FAR_EL1).
    pub fault_address: u64,
    /// Its syndrome (ESR_EL1).
    pub fault_esr: u64,
}

/// Where the monitor puts the stub Linux starts through on every start of a
/// core (`monitor/firmware/src/entry.rs`, [`layout::LINUX_STUB_OFFSET`]).
pub const LINUX_STUB_OFFSET: u32 = layout::LINUX_STUB_OFFSET as u32;

/// Size of [`Header`] in bytes.
pub const HEADER_SIZE: u32 = core::mem::size_of::<Header>() as u32;
/// Where the per-core records start (the page after the header's).
pub const CORE_RECORDS_OFFSET: u32 = CORE_RECORDS.offset as u32;
const _: () = assert!(HEADER_SIZE as usize <= layout::HEADER_BYTES);

impl Header {
    /// The header the secure side writes for `core_count` cores in a region of
    /// `region_size` bytes.
    pub const fn new(region_size: u32, core_count: u32, boot_count: u32, counter_hz: u32) -> Self {
        Self {
            magic: MAGIC,
            abi_version: crate::smc::ABI_VERSION,
            region_size,
            header_size: HEADER_SIZE,
            core_count,
            core_record_size: CORE_RECORD_SIZE,
            core_records_offset: CORE_RECORDS_OFFSET,
            boot_count,
            trace_offset: TRACE_OFFSET,
            trace_ring_size: TRACE_RING_SIZE,
            trace_entries: TRACE_ENTRIES,
            counter_hz,
            linux_generation: 1,
            core_record_stride: CORE_RECORD_STRIDE,
        }
    }

    /// Checks a header read from the region; tells what is wrong.
    pub fn validate(&self, region_size: u32) -> Result<(), HeaderError> {
        if self.magic != MAGIC {
            return Err(HeaderError::BadMagic(self.magic));
        }
        if self.abi_version >> 16 != crate::smc::ABI_VERSION >> 16 {
            return Err(HeaderError::IncompatibleVersion(self.abi_version));
        }
        if self.region_size != region_size || self.header_size != HEADER_SIZE {
            return Err(HeaderError::BadSize);
        }
        let records_end = u64::from(self.core_records_offset)
            + u64::from(self.core_count) * u64::from(self.core_record_stride);
        let traces_end = u64::from(self.trace_offset)
            + u64::from(self.core_count) * u64::from(self.trace_ring_size);
        if self.core_record_size != CORE_RECORD_SIZE
            || self.core_record_stride < self.core_record_size
            || self.core_records_offset < HEADER_SIZE
            || records_end > u64::from(self.trace_offset)
            || u64::from(self.trace_ring_size)
                < u64::from(TRACE_RING_HEADER) + u64::from(self.trace_entries) * 16
            || traces_end > u64::from(region_size)
        {
            return Err(HeaderError::BadLayout);
        }
        Ok(())
    }
}

/// Why a header was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Not a Tandem region.
    BadMagic(u32),
    /// Written by an incompatible major version.
    IncompatibleVersion(u32),
    /// Sizes disagree with the region.
    BadSize,
    /// Records would lie outside the region.
    BadLayout,
}

macro_rules! offset {
    ($name:literal, $field:ident) => {
        CConstant {
            name: $name,
            value: core::mem::offset_of!(Header, $field) as i64,
        }
    };
}

macro_rules! record {
    ($name:literal, $field:ident) => {
        CConstant {
            name: $name,
            value: core::mem::offset_of!(CoreRecord, $field) as i64,
        }
    };
}

pub(crate) const C_CONSTANTS: &[CConstant] = &[
    CConstant {
        name: "SHM_MAGIC",
        value: MAGIC as i64,
    },
    CConstant {
        name: "SHM_MAX_CORES",
        value: crate::MAX_CORES as i64,
    },
    CConstant {
        name: "SHM_HEADER_SIZE",
        value: HEADER_SIZE as i64,
    },
    CConstant {
        name: "SHM_CORE_RECORD_SIZE",
        value: CORE_RECORD_SIZE as i64,
    },
    offset!("SHM_OFF_MAGIC", magic),
    offset!("SHM_OFF_ABI_VERSION", abi_version),
    offset!("SHM_OFF_REGION_SIZE", region_size),
    offset!("SHM_OFF_HEADER_SIZE", header_size),
    offset!("SHM_OFF_CORE_COUNT", core_count),
    offset!("SHM_OFF_CORE_RECORD_SIZE", core_record_size),
    offset!("SHM_OFF_CORE_RECORDS_OFFSET", core_records_offset),
    offset!("SHM_OFF_BOOT_COUNT", boot_count),
    offset!("SHM_OFF_TRACE_OFFSET", trace_offset),
    offset!("SHM_OFF_TRACE_RING_SIZE", trace_ring_size),
    offset!("SHM_OFF_TRACE_ENTRIES", trace_entries),
    offset!("SHM_OFF_COUNTER_HZ", counter_hz),
    offset!("SHM_OFF_LINUX_GENERATION", linux_generation),
    offset!("SHM_OFF_CORE_RECORD_STRIDE", core_record_stride),
    record!("CORE_OFF_RTOS_BUSY", rtos_busy),
    record!("CORE_OFF_RTOS_RELEASES", rtos_releases),
    record!("CORE_OFF_DEADLINE_MISSES", deadline_misses),
    record!("CORE_OFF_SWITCHES_TO_RTOS", switches_to_rtos),
    record!("CORE_OFF_SWITCHES_TO_LINUX", switches_to_linux),
    record!("CORE_OFF_POLICY", policy),
    record!("CORE_OFF_LINUX_LOCK_HELD", linux_lock_held),
    record!("CORE_OFF_LINUX_LOCK_WAITING", linux_lock_waiting),
    record!("CORE_OFF_DISPATCH_HANDOFFS", dispatch_handoffs),
    record!(
        "CORE_OFF_DISPATCH_HANDOFF_WAIT_MAX",
        dispatch_handoff_wait_max
    ),
    record!(
        "CORE_OFF_DISPATCH_HANDOFF_WAIT_SUM",
        dispatch_handoff_wait_sum
    ),
    record!("CORE_OFF_DISPATCH_STARTS", dispatch_starts),
    record!(
        "CORE_OFF_DISPATCH_PREEMPTED_HOLDING",
        dispatch_preempted_holding
    ),
    record!(
        "CORE_OFF_DISPATCH_PREEMPTED_WAITING",
        dispatch_preempted_waiting
    ),
    record!("CORE_OFF_MONITOR_REFUSED_TRAPS", monitor_refused_traps),
    record!("CORE_OFF_MONITOR_IDLE_WAKEUPS", monitor_idle_wakeups),
    record!("CORE_OFF_MONITOR_CPU_OFFS", monitor_cpu_offs),
    CConstant {
        name: "SPIN_SHIFT",
        value: SPIN_SHIFT as i64,
    },
    CConstant {
        name: "TRACE_TO_RTOS",
        value: TRACE_TO_RTOS as i64,
    },
    CConstant {
        name: "TRACE_TO_LINUX",
        value: TRACE_TO_LINUX as i64,
    },
    CConstant {
        name: "TRACE_TO_IDLE",
        value: TRACE_TO_IDLE as i64,
    },
    CConstant {
        name: "CTXSW_IDLE",
        value: CTXSW_IDLE as i64,
    },
    CConstant {
        name: "CTXSW_RUNNING",
        value: CTXSW_RUNNING as i64,
    },
    CConstant {
        name: "CTXSW_DONE",
        value: CTXSW_DONE as i64,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_header_validates() {
        assert_eq!(
            Header::new(0x20_0000, 8, 1, 62_500_000).validate(0x20_0000),
            Ok(())
        );
        assert!(region_bytes(8) <= 0x20_0000);
        assert_eq!(steal_offset(1), 0x10_1000);
        assert_eq!(core_record_offset(2), 0x3000);
        assert_eq!(trace_ring_offset(1), 0xE000);
        assert_eq!(latency_offset(1), 0x5_0000);
        assert_eq!(region_bytes(4), 0x10_4000);
        assert_eq!(core::mem::offset_of!(StolenTime, stolen_time), 8);
        assert_eq!(
            trace_entry_offset(1, TRACE_ENTRIES as u64),
            trace_entry_offset(1, 0)
        );
    }

    #[test]
    fn corrupt_headers_are_rejected_with_reason() {
        let size = region_bytes(8) as u32;
        let good = Header::new(size, 8, 1, 1);
        let mut h = good;
        h.magic = 0;
        assert_eq!(h.validate(size), Err(HeaderError::BadMagic(0)));
        h = good;
        h.abi_version = 1 << 16 | 7;
        assert_eq!(
            h.validate(size),
            Err(HeaderError::IncompatibleVersion(1 << 16 | 7)),
            "the layout before whole pages per core"
        );
        h = good;
        h.core_count = u32::MAX;
        assert_eq!(h.validate(size), Err(HeaderError::BadLayout));
        h = good;
        h.trace_entries = 1 << 30;
        assert_eq!(h.validate(size), Err(HeaderError::BadLayout));
        h = good;
        h.core_record_stride = 64;
        assert_eq!(h.validate(size), Err(HeaderError::BadLayout));
        assert_eq!(good.validate(size + 1), Err(HeaderError::BadSize));
    }
}
