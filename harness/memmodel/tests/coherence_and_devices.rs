//! Coherence between the L1 data caches (a line written on one core and read on another moves between them) and the fixed costs of device accesses.

mod common;

use common::{load, model, store};
use tandem_memmodel::{AccessKind, DataAccess, ExceptionLevel};

#[test]
fn a_line_written_on_one_core_is_fetched_from_it_by_another() {
    for name in ["a53", "arm11-003"] {
        let mut m = model(name, 2);
        let transfer = m.profile().coherence_transfer_ns;
        let upgrade = m.profile().coherence_upgrade_ns;
        let memory = m.profile().memory_latency_ns;
        let line = 0x4000_1000;
        // Core 0 writes it (from DRAM), core 1 reads it from core 0's L1.
        assert_eq!(m.data_access(0, 0, &store(line)), memory);
        assert_eq!(m.data_access(1, 1_000, &load(line)), transfer);
        // Both share it now: core 0's next write invalidates core 1's copy.
        assert_eq!(m.data_access(0, 2_000, &store(line)), upgrade);
        assert_eq!(m.data_access(0, 2_010, &store(line)), 0, "already owned");
        // So core 1's next read misses again and takes the line from core 0.
        assert_eq!(m.data_access(1, 3_000, &load(line)), transfer);
        assert_eq!(m.core_stats(1).coherence_transfers, 2);
        assert_eq!(m.core_stats(0).coherence_upgrades, 1);
        // A line nobody wrote is read from memory or the L2, not moved.
        let quiet = 0x4000_2000;
        m.data_access(0, 4_000, &load(quiet));
        let second = m.data_access(1, 5_000, &load(quiet));
        let expected = m.profile().l2.map_or(transfer, |l2| l2.hit_ns);
        assert_eq!(second, expected, "{name}");
    }
}

#[test]
fn devices_cost_their_fixed_stall_and_bypass_the_caches() {
    let mut m = model("a53", 1);
    let access = |address, io| DataAccess {
        virtual_address: address,
        physical_address: address,
        size: 4,
        kind: AccessKind::Load,
        el: ExceptionLevel::El1,
        io,
    };
    // The GIC distributor and redistributor, every time (no caching).
    for _ in 0..3 {
        assert_eq!(m.data_access(0, 0, &access(0x0800_0004, true)), 100);
        assert_eq!(m.data_access(0, 0, &access(0x080A_0010, true)), 50);
    }
    // I/O at an address in no listed device: the profile's default.
    assert_eq!(m.data_access(0, 0, &access(0x0910_0000, true)), 100);
    // Memory right after the distributor's range is memory.
    assert_eq!(m.data_access(0, 0, &access(0x0801_0000, false)), 100);
    assert_eq!(m.data_access(0, 200, &access(0x0801_0000, false)), 0);
    assert_eq!(m.core_stats(0).device_accesses, 7);
    assert_eq!(m.core_stats(0).memory_reads, 1);
}
