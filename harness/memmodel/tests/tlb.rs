//! TLB behaviour: reach knees at the micro and main TLB sizes, ASID-tagged switches against flushing ones, TLBI scopes (local, inner shareable, by world), and walks over real descriptors.

mod common;

use std::collections::BTreeMap;

use common::{enable_mmu, load_at, model, ttbr, write};
use tandem_memmodel::{
    CoreStats, MemoryModel, SystemEvent, TableReader, Tlbi, TlbiOperation, TranslationRegister,
};

const ROOT_A: u64 = 0x4100_0000;
const ROOT_B: u64 = 0x4200_0000;

/// One load in each of `pages` consecutive pages from `va`, each at a
/// different line so the data stays in the L1; returns the clock after.
fn touch_pages(
    m: &mut MemoryModel,
    core: usize,
    mut now: u64,
    va: u64,
    pa: u64,
    pages: u64,
) -> u64 {
    for i in 0..pages {
        let offset = i * 4096 + (i % 64) * 64;
        now += 4 + m.data_access(core, now, &load_at(va + offset, pa + offset));
    }
    now
}

fn delta(after: &CoreStats, before: &CoreStats) -> (u64, u64, u64) {
    (
        after.micro_tlb_misses - before.micro_tlb_misses,
        after.main_tlb_misses - before.main_tlb_misses,
        after.translation_stall_ns - before.translation_stall_ns,
    )
}

/// Micro misses, main misses and translation stall of the third round of
/// a cyclic sweep over `pages` pages.
fn sweep(pages: u64) -> (u64, u64, u64) {
    let mut m = model("a53", 1);
    enable_mmu(&mut m, 0, ROOT_A, 1);
    let mut now = 0;
    for _ in 0..2 {
        now = touch_pages(&mut m, 0, now, 0x10_0000, 0x5000_0000, pages);
    }
    let before = *m.core_stats(0);
    touch_pages(&mut m, 0, now, 0x10_0000, 0x5000_0000, pages);
    delta(m.core_stats(0), &before)
}

#[test]
fn reach_knees_at_the_micro_and_main_tlb_sizes() {
    let mut table = Vec::new();
    for pages in [4, 10, 11, 64, 512, 513, 1024, 2048] {
        let (micro, main, stall) = sweep(pages);
        table.push((pages, micro, main, stall as f64 / pages as f64));
    }
    println!("a53 TLB reach (pages, micro misses, main misses, ns per access): {table:?}");
    let row = |pages| *table.iter().find(|r| r.0 == pages).unwrap();
    // 10-entry micro TLB: 10 pages all hit, 11 all miss (LRU, cyclic).
    assert_eq!(row(10).1, 0);
    assert_eq!(row(11).1, 11);
    assert_eq!(
        row(11).3,
        2.0,
        "a micro miss that hits the main TLB costs 2 ns"
    );
    // 512-entry 4-way main TLB: 512 consecutive pages fill its 128 sets
    // exactly; a 513th puts 5 pages in one set, and they thrash.
    assert_eq!(row(512).2, 0);
    assert_eq!(row(513).2, 5);
    assert_eq!(row(1024).2, 1024);
    assert!(
        row(1024).3 > row(512).3 + 4.0,
        "walks cost at least a level's 4 ns"
    );
}

/// The translation stall and main TLB misses of task A's round after it
/// ran, B ran, and A is back; with `flush`, every switch empties the TLB
/// as an OS without ASIDs must.
fn switch_back(flush: bool) -> (u64, u64) {
    let mut m = model("a53", 1);
    let (asid_a, asid_b) = if flush { (0, 0) } else { (1, 2) };
    enable_mmu(&mut m, 0, ROOT_A, asid_a);
    let switch = |m: &mut MemoryModel, root, asid| {
        write(m, 0, TranslationRegister::Ttbr0El1, ttbr(root, asid));
        if flush {
            m.system_event(
                0,
                &SystemEvent::Tlbi {
                    tlbi: Tlbi {
                        operation: TlbiOperation::VmallE1,
                        broadcast: false,
                    },
                    operand: 0,
                },
            );
        }
    };
    // Both tasks use the same 64 virtual pages, backed by different memory.
    let mut now = touch_pages(&mut m, 0, 0, 0x40_0000, 0x5000_0000, 64);
    switch(&mut m, ROOT_B, asid_b);
    now = touch_pages(&mut m, 0, now, 0x40_0000, 0x5800_0000, 64);
    switch(&mut m, ROOT_A, asid_a);
    let before = *m.core_stats(0);
    touch_pages(&mut m, 0, now, 0x40_0000, 0x5000_0000, 64);
    let (_, main, stall) = delta(m.core_stats(0), &before);
    (stall, main)
}

#[test]
fn asid_tagged_switches_keep_entries_and_flushing_ones_refill() {
    let (tagged_stall, tagged_walks) = switch_back(false);
    let (flushed_stall, flushed_walks) = switch_back(true);
    println!(
        "64 pages after a switch: ASIDs {tagged_stall} ns ({tagged_walks} walks), \
         flush {flushed_stall} ns ({flushed_walks} walks)"
    );
    assert_eq!(tagged_walks, 0);
    assert_eq!(flushed_walks, 64);
    assert!(flushed_stall > tagged_stall + 64 * 4);
}

fn tlbi(
    m: &mut MemoryModel,
    core: usize,
    operation: TlbiOperation,
    broadcast: bool,
    operand: u64,
) -> u64 {
    m.system_event(
        core,
        &SystemEvent::Tlbi {
            tlbi: Tlbi {
                operation,
                broadcast,
            },
            operand,
        },
    )
}

/// Each core's main TLB misses when it loads `va` again.
fn misses_on_retouch(m: &mut MemoryModel, va: u64) -> Vec<u64> {
    (0..m.cores())
        .map(|core| {
            let before = m.core_stats(core).main_tlb_misses;
            m.data_access(core, 1_000_000, &load_at(va, 0x5000_0000));
            m.core_stats(core).main_tlb_misses - before
        })
        .collect()
}

#[test]
fn an_inner_shareable_tlbi_reaches_every_core_and_a_local_one_its_own() {
    let mut m = model("a53", 4);
    let va = 0x7000_1000;
    for core in 0..4 {
        // Threads of one process: the same tables and ASID everywhere.
        enable_mmu(&mut m, core, ROOT_A, 1);
        m.data_access(core, 0, &load_at(va, 0x5000_0000));
    }
    assert_eq!(misses_on_retouch(&mut m, va), [0, 0, 0, 0]);
    let operand = (1 << 48) | (va >> 12);
    let cost = tlbi(&mut m, 0, TlbiOperation::VaE1, true, operand);
    assert_eq!(cost, m.profile().tlb.tlbi_broadcast_ns);
    assert_eq!(misses_on_retouch(&mut m, va), [1, 1, 1, 1]);
    tlbi(&mut m, 2, TlbiOperation::VaE1, false, operand);
    assert_eq!(misses_on_retouch(&mut m, va), [0, 0, 1, 0]);
    // By ASID: another ASID's invalidation leaves these entries.
    tlbi(&mut m, 0, TlbiOperation::AsidE1, true, 7 << 48);
    assert_eq!(misses_on_retouch(&mut m, va), [0, 0, 0, 0]);
    tlbi(&mut m, 0, TlbiOperation::AsidE1, true, 1 << 48);
    assert_eq!(misses_on_retouch(&mut m, va), [1, 1, 1, 1]);
    for core in 0..4 {
        assert!(m.core_stats(core).tlbi_received >= 3);
    }
}

#[test]
fn the_worlds_keep_their_own_entries() {
    let mut m = model("a53", 2);
    let va = 0x1000;
    for core in 0..2 {
        enable_mmu(&mut m, core, ROOT_A, 1);
    }
    // Core 1 goes to the secure world (the RTOS), with the same VA.
    m.system_event(1, &SystemEvent::WorldSwitch { secure: true });
    m.data_access(0, 0, &load_at(va, 0x5000_0000));
    m.data_access(1, 0, &load_at(va, 0x0e20_0000));
    // A normal-world broadcast flush leaves the secure world's entries.
    tlbi(&mut m, 0, TlbiOperation::VmallE1, true, 0);
    assert_eq!(misses_on_retouch(&mut m, va), [1, 0]);
    // Core 1 back in the normal world: its normal-world entry went with
    // the flush; back in the secure world its entry is still there.
    m.system_event(1, &SystemEvent::WorldSwitch { secure: false });
    assert_eq!(misses_on_retouch(&mut m, va), [0, 1]);
    m.system_event(1, &SystemEvent::WorldSwitch { secure: true });
    assert_eq!(misses_on_retouch(&mut m, va), [0, 0]);
}

/// Page tables in a map from physical address to descriptor.
#[derive(Default)]
struct Tables(BTreeMap<u64, u64>);

impl TableReader for Tables {
    fn read_descriptor(&mut self, physical_address: u64, _secure: bool) -> Option<u64> {
        Some(self.0.get(&physical_address).copied().unwrap_or(0))
    }
}

/// Page tables that also record every read: its address and security.
#[derive(Default)]
struct RecordingTables {
    tables: Tables,
    reads: Vec<(u64, bool)>,
}

impl TableReader for RecordingTables {
    fn read_descriptor(&mut self, physical_address: u64, secure: bool) -> Option<u64> {
        self.reads.push((physical_address, secure));
        self.tables.read_descriptor(physical_address, secure)
    }
}

/// A VA whose four table indices are 8, 16, 24 and 0: the descriptors of
/// levels 0, 1 and 2 lie 64, 128 and 192 bytes into their tables (L1D
/// sets 1, 2 and 3 of page-aligned tables), the level 3 one at its
/// table's start (set 0).
const SPREAD_VA: u64 = (8 << 39) | (16 << 30) | (24 << 21);

/// Four levels of tables from `root` mapping the 4 KiB page at `va` to
/// `page`, the tables at `root` + 1, 2 and 3 MiB; `ns_table` sets
/// NSTable in the root's descriptor.
fn four_levels(root: u64, va: u64, page: u64, ns_table: bool) -> Tables {
    let mut tables = Tables::default();
    let next = [root + 0x10_0000, root + 0x20_0000, root + 0x30_0000];
    let index = |level: u32| (va >> (39 - 9 * level)) & 511;
    let ns = if ns_table { 1 << 63 } else { 0 };
    tables.0.insert(root + index(0) * 8, next[0] | 0b11 | ns);
    tables.0.insert(next[0] + index(1) * 8, next[1] | 0b11);
    tables.0.insert(next[1] + index(2) * 8, next[2] | 0b11);
    // A page: valid, page, AF.
    tables.0.insert(next[2] + index(3) * 8, page | 0x403);
    tables
}

/// Guest lines 8 KiB apart share an L1D set of `a53` (32 KiB, 4 ways,
/// 64-byte lines: 128 sets); loaded at EL3 with its MMU off, they take no
/// walk of their own.
fn el3_load(pa: u64) -> tandem_memmodel::DataAccess {
    tandem_memmodel::DataAccess {
        el: tandem_memmodel::ExceptionLevel::El3,
        ..load_at(pa, pa)
    }
}

/// L1D misses of loading again the four guest lines of set 0, after a
/// walk of `SPREAD_VA` with `tables` (`None`: no reader, derived tables).
fn guest_misses_after_walk(tables: Option<&mut RecordingTables>) -> (u64, CoreStats) {
    let mut m = model("a53", 1);
    enable_mmu(&mut m, 0, ROOT_A, 1);
    let guest: Vec<u64> = (0..4).map(|k| 0x5000_0000 + k * 0x2000).collect();
    let mut now = 0;
    for &pa in &guest {
        now += 4 + m.data_access(0, now, &el3_load(pa));
    }
    // The page is at 0x6000_0000; the access lies in its line of set 5.
    let access = load_at(SPREAD_VA + 0x140, 0x6000_0140);
    now += 4 + match tables {
        Some(tables) => m.data_access_with(0, now, &access, tables),
        None => m.data_access(0, now, &access),
    };
    let before = m.core_stats(0).l1d_misses;
    for &pa in &guest {
        now += 4 + m.data_access(0, now, &el3_load(pa));
    }
    (m.core_stats(0).l1d_misses - before, *m.core_stats(0))
}

#[test]
fn a_walk_reads_the_guest_descriptors_and_its_line_evicts_a_guest_line_of_its_set() {
    let mut tables = RecordingTables {
        tables: four_levels(ROOT_A, SPREAD_VA, 0x6000_0000, false),
        reads: Vec::new(),
    };
    let (misses, stats) = guest_misses_after_walk(Some(&mut tables));
    let level3_table = ROOT_A + 0x30_0000;
    assert_eq!(
        tables.reads,
        vec![
            (ROOT_A + 64, false),
            (ROOT_A + 0x10_0000 + 128, false),
            (ROOT_A + 0x20_0000 + 192, false),
            (level3_table, false),
        ],
        "the walk reads each level's descriptor where the guest's tables put it,          in the normal world's space"
    );
    assert_eq!((stats.walks_read, stats.walks_unreadable), (1, 0));
    assert!(
        misses >= 1,
        "the level 3 descriptor's line (set 0) took a way from the guest's four lines of set 0"
    );
    // Without a reader the deeper tables lie above 2^62: no guest set is hit.
    let (derived_misses, derived) = guest_misses_after_walk(None);
    assert_eq!((derived.walks_read, derived.walks_unreadable), (0, 1));
    assert_eq!(derived_misses, 0, "derived tables evict no guest line here");
}

#[test]
fn secure_walks_read_the_secure_space_until_ns_table_says_otherwise() {
    let walk_reads = |secure_world: bool, ns_table: bool| {
        let mut m = model("a53", 1);
        enable_mmu(&mut m, 0, ROOT_A, 1);
        if secure_world {
            m.system_event(0, &SystemEvent::WorldSwitch { secure: true });
        }
        let mut tables = RecordingTables {
            tables: four_levels(ROOT_A, SPREAD_VA, 0x6000_0000, ns_table),
            reads: Vec::new(),
        };
        m.data_access_with(0, 0, &load_at(SPREAD_VA, 0x6000_0000), &mut tables);
        tables
            .reads
            .iter()
            .map(|&(_, secure)| secure)
            .collect::<Vec<_>>()
    };
    assert_eq!(walk_reads(false, false), [false; 4], "normal world");
    assert_eq!(
        walk_reads(false, true),
        [false; 4],
        "NSTable means nothing in the normal world"
    );
    assert_eq!(walk_reads(true, false), [true; 4], "secure world");
    assert_eq!(
        walk_reads(true, true),
        [true, false, false, false],
        "the root's NSTable puts the tables below it in the non-secure space"
    );
}

#[test]
fn an_unreadable_descriptor_derives_the_rest_of_its_walk_and_is_counted() {
    /// Reads only the root table.
    struct RootOnly(Tables);
    impl TableReader for RootOnly {
        fn read_descriptor(&mut self, physical_address: u64, secure: bool) -> Option<u64> {
            (physical_address >> 12 == ROOT_A >> 12)
                .then(|| self.0.read_descriptor(physical_address, secure))
                .flatten()
        }
    }
    let mut m = model("a53", 1);
    enable_mmu(&mut m, 0, ROOT_A, 1);
    let mut tables = RootOnly(four_levels(ROOT_A, SPREAD_VA, 0x6000_0000, false));
    m.data_access_with(0, 0, &load_at(SPREAD_VA, 0x6000_0000), &mut tables);
    let stats = m.core_stats(0);
    assert_eq!((stats.walks_read, stats.walks_unreadable), (0, 1));
    assert_eq!(stats.walk_reads, 4, "every level is still charged");
}

#[test]
fn walks_over_real_descriptors_find_blocks_and_faults() {
    // VA 0x4000_0000 + 2 MiB as one block; VA 0x4020_0000 as a page.
    let mut tables = Tables::default();
    let (l1, l2, l3) = (ROOT_A + 0x1000, ROOT_A + 0x2000, ROOT_A + 0x3000);
    tables.0.insert(ROOT_A, l1 | 0b11);
    tables.0.insert(l1 + 8, l2 | 0b11);
    tables.0.insert(l2, 0x8000_0000 | 0b01);
    tables.0.insert(l2 + 8, l3 | 0b11);
    tables.0.insert(l3, 0x9000_0000 | (1 << 11) | 0b11);
    let mut m = model("a53", 1);
    enable_mmu(&mut m, 0, ROOT_A, 1);
    let mut now = 0;
    for i in 0..512 {
        let va = 0x4000_0000 + i * 4096;
        now += 4 + m.data_access_with(0, now, &load_at(va, 0x8000_0000 + i * 4096), &mut tables);
    }
    let stats = *m.core_stats(0);
    assert_eq!(
        stats.main_tlb_misses, 1,
        "one 2 MiB block entry maps them all"
    );
    assert_eq!(stats.walk_reads, 3, "levels 0, 1 and the block at 2");
    // The page below the table of level 3; the walk cache then holds it.
    m.data_access_with(0, now, &load_at(0x4020_0000, 0x9000_0000), &mut tables);
    assert_eq!(m.core_stats(0).walk_reads, 3 + 4);
    // An unmapped address faults on every access: nothing is cached.
    for _ in 0..3 {
        m.data_access_with(0, now, &load_at(0x4060_0000, 0x9000_0000), &mut tables);
    }
    assert_eq!(m.core_stats(0).main_tlb_misses, 2 + 3);

    // Without descriptors the same sweep walks every page.
    let mut derived = model("a53", 1);
    enable_mmu(&mut derived, 0, ROOT_A, 1);
    touch_pages(&mut derived, 0, 0, 0x4000_0000, 0x8000_0000, 512);
    assert_eq!(derived.core_stats(0).main_tlb_misses, 512);
}

#[test]
fn the_walk_cache_saves_upper_levels() {
    let walks = |profile: &str| {
        let mut m = model(profile, 1);
        enable_mmu(&mut m, 0, ROOT_A, 1);
        touch_pages(&mut m, 0, 0, 0x10_0000, 0x5000_0000, 256);
        let stats = *m.core_stats(0);
        (
            stats.main_tlb_misses,
            stats.walk_reads,
            stats.walk_cache_hits,
        )
    };
    // a53: 256 walks, the first reads 4 levels, the rest hit the walk cache.
    assert_eq!(walks("a53"), (256, 4 + 255, 255));
    // arm11-003: no walk cache, and only the deepest two levels are charged.
    let (misses, reads, hits) = walks("arm11-003");
    assert_eq!((reads, hits), (2 * misses, 0));
}
