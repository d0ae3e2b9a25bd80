//! The monitor's part of the region shared with Linux: the header, written at
//! boot, and per core the world-switch counts, trace ring and stolen time. The monitor
//! keeps the authoritative counts in its own memory and only publishes them,
//! so whatever Linux writes here changes nothing the monitor does.

use core::ptr::addr_of_mut;
use tandem_abi::boot::Policies;
use tandem_abi::shm::{
    CoreRecord, Header, StolenTime, TRACE_ENTRIES, TraceEntry, core_record_offset, region_bytes,
    steal_offset, trace_entry_offset, trace_ring_offset,
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

/// The monitor's own account of one core's world switches.
#[derive(Clone, Copy, Debug)]
pub struct SwitchLog {
    /// Linux -> RTOS.
    pub to_rtos: u64,
    /// RTOS -> Linux.
    pub to_linux: u64,
    /// Trace entries written so far.
    pub traced: u64,
}

impl SwitchLog {
    /// Nothing yet.
    pub const ZERO: Self = Self {
        to_rtos: 0,
        to_linux: 0,
        traced: 0,
    };

    /// Records a switch to `event` (an `abi::shm::TRACE_*`) at counter `time`
    /// and publishes the counts and the trace entry for `core`.
    pub fn record(&mut self, core: usize, event: u64, time: u64) {
        match event {
            tandem_abi::shm::TRACE_TO_RTOS => self.to_rtos += 1,
            tandem_abi::shm::TRACE_TO_LINUX => self.to_linux += 1,
            _ => {}
        }
        let n = self.traced;
        self.traced += 1;
        // SAFETY: offsets come from the ABI's constants for a core index the
        // board has (never from the region), so every write lands inside the
        // reserved region, on fields of the right type and alignment.
        unsafe {
            let record = base().add(core_record_offset(core)) as *mut CoreRecord;
            addr_of_mut!((*record).switches_to_rtos).write_volatile(self.to_rtos);
            addr_of_mut!((*record).switches_to_linux).write_volatile(self.to_linux);
            let entry = base().add(trace_entry_offset(core, n)) as *mut TraceEntry;
            entry.write_volatile(TraceEntry { time, event });
            (base().add(trace_ring_offset(core)) as *mut u64).write_volatile(n + 1);
        }
        debug_assert!(TRACE_ENTRIES.is_power_of_two());
    }
}
