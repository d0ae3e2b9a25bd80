//! The monitor's part of the region shared with Linux: the header, written at
//! boot, and per core the world-switch counts, trace ring and stolen time. The monitor
//! keeps the authoritative counts in its own memory and only publishes them,
//! so whatever Linux writes here changes nothing the monitor does.

use core::ptr::addr_of_mut;
use core::sync::atomic::{Ordering, compiler_fence};
use tandem_abi::boot::Policies;
use tandem_abi::shm::{
    CoreRecord, Header, StolenTime, TRACE_ENTRIES, TRACE_RING_HEADER, TRACE_TO_LINUX,
    TRACE_TO_RTOS, TraceEntry, core_record_offset, region_bytes, steal_offset, trace_ring_offset,
};
use tandem_board::BOARD;

/// Where the shared region starts, as a pointer to bytes.
fn base() -> *mut u8 {
    BOARD.shared.base as *mut u8
}

/// Writes a fresh header and clears the records and trace rings; the boot
/// count survives a reset if the old header still validates.
pub fn init(core_count: u32, policies: &Policies) {
    let size = BOARD.shared.size as u32;
    assert!(
        region_bytes(core_count as usize) <= size as usize,
        "shared region too small for the layout"
    );
    let header = base() as *mut Header;
    // SAFETY: the shared region is normal RAM reserved for us (no-map in
    // Linux's device tree), large enough for the layout (checked above), and
    // Linux is not running yet, so nothing else touches it.
    unsafe {
        let old = header.read_volatile();
        let boot_count = if old.validate(size).is_ok() {
            old.boot_count.wrapping_add(1)
        } else {
            1
        };
        core::ptr::write_bytes(
            base().add(core_record_offset(0)),
            0,
            region_bytes(core_count as usize) - core_record_offset(0),
        );
        for core in 0..core_count as usize {
            let record = base().add(core_record_offset(core)) as *mut CoreRecord;
            addr_of_mut!((*record).policy).write_volatile(policies.of(core) as u32);
        }
        header.write_volatile(Header::new(
            size,
            core_count,
            boot_count,
            BOARD.counter_hz as u32,
        ));
    }
}

/// Publishes which Linux runs (`Header::linux_generation`): the monitor
/// counts restarts in its own memory and only writes the number here.
pub fn publish_linux_generation(generation: u32) {
    let header = base() as *mut Header;
    // SAFETY: the header lies at the start of the shared region (`init`
    // wrote it); one aligned u32 store.
    unsafe { addr_of_mut!((*header).linux_generation).write_volatile(generation) };
}

/// Linux stopped on `core` without leaving its locks: the lock-state words
/// it wrote there describe nothing now, and a count left behind would keep
/// the RTOS's `migrate` dispatch away from the core for good.
pub fn linux_stopped(core: usize) {
    // SAFETY: the offset comes from the ABI's constants for a core index the
    // board has, inside the region (`init` checked its size), aligned u32s.
    unsafe {
        let record = base().add(core_record_offset(core)) as *mut CoreRecord;
        addr_of_mut!((*record).linux_lock_held).write_volatile(0);
        addr_of_mut!((*record).linux_lock_waiting).write_volatile(0);
    }
}

/// Publishes `core`'s stolen time (ns) in its PV time record. The record's
/// revision and attributes stay 0 from [`init`], as DEN0057A's revision 0
/// asks; Linux reads `stolen_time` with one 64-bit load, so one 64-bit
/// store keeps it from seeing half an update.
pub fn publish_stolen(core: usize, ns: u64) {
    // SAFETY: the offset comes from the ABI's constants for a core index the
    // board has, inside the region (`init` checked its size), naturally
    // aligned for a u64.
    unsafe {
        let record = base().add(steal_offset(core)) as *mut StolenTime;
        addr_of_mut!((*record).stolen_time).write_volatile(ns);
    }
}

/// A count the monitor keeps and publishes: its value and where it goes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Count {
    n: u64,
    published: *mut u64,
}

impl Count {
    const ZERO: Self = Self {
        n: 0,
        published: core::ptr::null_mut(),
    };

    /// Counts one more and publishes the total.
    ///
    /// # Safety
    ///
    /// `published` must point into the shared region (set by `SwitchLog::new`).
    #[inline(always)]
    unsafe fn add_one(&mut self) {
        self.n += 1;
        // SAFETY: a u64 field of this core's record (the caller's promise).
        unsafe { self.published.write_volatile(self.n) };
    }
}

/// The monitor's own account of one core's world switches, and where it
/// publishes them (worked out once: a switch only stores).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SwitchLog {
    /// Linux -> RTOS.
    to_rtos: Count,
    /// RTOS -> Linux.
    to_linux: Count,
    /// Trace entries written so far, and the core's trace ring (its
    /// `written` count first).
    traced: Count,
}

const _: () = assert!(TRACE_ENTRIES.is_power_of_two());

impl SwitchLog {
    /// Nothing yet, published nowhere (before a core starts).
    pub const ZERO: Self = Self {
        to_rtos: Count::ZERO,
        to_linux: Count::ZERO,
        traced: Count::ZERO,
    };

    /// Nothing yet, for `core`, a core the board has.
    pub fn new(core: usize) -> Self {
        // SAFETY: only addresses are computed, from the ABI's offsets for a
        // core the board has, inside the reserved region.
        unsafe {
            let record = base().add(core_record_offset(core)) as *mut CoreRecord;
            Self {
                to_rtos: Count {
                    n: 0,
                    published: addr_of_mut!((*record).switches_to_rtos),
                },
                to_linux: Count {
                    n: 0,
                    published: addr_of_mut!((*record).switches_to_linux),
                },
                traced: Count {
                    n: 0,
                    published: base().add(trace_ring_offset(core)) as *mut u64,
                },
            }
        }
    }

    /// Records a switch to `event` (an `abi::shm::TRACE_*`) at counter `time`
    /// and publishes the count and the trace entry.
    #[inline(always)]
    pub fn record(&mut self, event: u64, time: u64) {
        let n = self.traced.n;
        let ring = self.traced.published;
        // SAFETY: `new` pointed the counts at this core's record and ring,
        // inside the reserved region (never at addresses taken from the
        // region), so every write lands on fields of the right type and
        // alignment; the entry's index is below TRACE_ENTRIES.
        unsafe {
            match event {
                TRACE_TO_RTOS => self.to_rtos.add_one(),
                TRACE_TO_LINUX => self.to_linux.add_one(),
                _ => {}
            }
            let first = ring.byte_add(TRACE_RING_HEADER as usize) as *mut TraceEntry;
            let index = (n % u64::from(TRACE_ENTRIES)) as usize;
            // A plain store, so both words go in one instruction; the fence
            // keeps it before the count that tells readers it is there.
            first.add(index).write(TraceEntry { time, event });
            compiler_fence(Ordering::Release);
            self.traced.add_one();
        }
    }
}

/// The monitor's counts of what Linux made it refuse, of Linux's CPU_OFFs
/// and of its idle wake-ups that found nothing to do, and where it
/// publishes them: counted, not logged, since Linux can make any of them
/// happen in a loop.
#[derive(Clone, Copy, Debug)]
pub struct CoreCounts {
    refused_traps: u32,
    idle_wakeups: u32,
    cpu_offs: u32,
    record: *mut CoreRecord,
}

impl CoreCounts {
    /// Nothing yet, published nowhere (before a core starts).
    pub const ZERO: Self = Self {
        refused_traps: 0,
        idle_wakeups: 0,
        cpu_offs: 0,
        record: core::ptr::null_mut(),
    };

    /// Nothing yet, for `core`, a core the board has.
    pub fn new(core: usize) -> Self {
        Self {
            // SAFETY: only an address is computed, from the ABI's offset for
            // a core the board has, inside the reserved region.
            record: unsafe { base().add(core_record_offset(core)) } as *mut CoreRecord,
            ..Self::ZERO
        }
    }

    /// One more access of Linux's refused (an Undefined Instruction).
    pub fn refused_trap(&mut self) {
        self.refused_traps = self.refused_traps.wrapping_add(1);
        // SAFETY: `new` pointed `record` at this core's record inside the
        // region; an aligned u32 store.
        unsafe {
            addr_of_mut!((*self.record).monitor_refused_traps).write_volatile(self.refused_traps)
        };
    }

    /// One more wake-up of the idle monitor that found nothing to do.
    pub fn idle_wakeup(&mut self) {
        self.idle_wakeups = self.idle_wakeups.wrapping_add(1);
        // SAFETY: as in `refused_trap`.
        unsafe {
            addr_of_mut!((*self.record).monitor_idle_wakeups).write_volatile(self.idle_wakeups)
        };
    }

    /// One more PSCI CPU_OFF of this core.
    pub fn cpu_off(&mut self) {
        self.cpu_offs = self.cpu_offs.wrapping_add(1);
        // SAFETY: as in `refused_trap`.
        unsafe { addr_of_mut!((*self.record).monitor_cpu_offs).write_volatile(self.cpu_offs) };
    }
}
