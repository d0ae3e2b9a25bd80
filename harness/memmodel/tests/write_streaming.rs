//! Write streaming: after a run of stores that write whole lines, store misses no longer allocate (a53's read-allocate mode), so a copy fills only the lines it reads; a partial line or a load of the line being written ends the mode.

mod common;

use common::{load, model, store};
use tandem_memmodel::{CoreStats, DataAccess, MemoryModel, ModelOptions, Profile};

const SOURCE: u64 = 0x5000_0000;
const DESTINATION: u64 = 0x5100_0000;
const COPY_BYTES: u64 = 64 << 10;

/// A copy as an A53's memcpy makes it (the MMU off, so no walks): a
/// 16-byte load and a 16-byte store at a time (LDP/STP of two registers).
/// Returns the core's counters after it, minus those before.
fn copy(m: &mut MemoryModel, bytes: u64) -> CoreStats {
    let before = *m.core_stats(0);
    let mut now = 0;
    for offset in (0..bytes).step_by(16) {
        let pair = |access: DataAccess| DataAccess { size: 16, ..access };
        now += 1 + m.data_access(0, now, &pair(load(SOURCE + offset)));
        now += 1 + m.data_access(0, now, &pair(store(DESTINATION + offset)));
    }
    let after = *m.core_stats(0);
    CoreStats {
        l1d_fills: after.l1d_fills - before.l1d_fills,
        memory_reads: after.memory_reads - before.memory_reads,
        streamed_lines: after.streamed_lines - before.streamed_lines,
        streamed_to_memory: after.streamed_to_memory - before.streamed_to_memory,
        ..after
    }
}

#[test]
fn a_64_kib_copy_on_a53_allocates_no_more_lines_than_it_reads() {
    let streaming = Profile::builtin("a53")
        .unwrap()
        .write_streaming
        .expect("a53 has write streaming");
    let line_bytes = 64;
    let read_lines = COPY_BYTES / line_bytes;
    let mut m = model("a53", 1);
    let stats = copy(&mut m, COPY_BYTES);
    println!(
        "a53 64 KiB copy: {} L1D fills, {} DRAM reads, {} lines streamed ({} past the L2), \
         {} lines read",
        stats.l1d_fills,
        stats.memory_reads,
        stats.streamed_lines,
        stats.streamed_to_memory,
        read_lines
    );
    // The TRM's thresholds: destination lines before the L1 one still
    // allocate, and the prefetcher may have fetched as many destination
    // lines as it keeps in flight when the mode starts.
    let outstanding = m.profile().prefetch.map_or(0, |p| p.outstanding as u64);
    let slack = u64::from(streaming.l1_no_allocate_line) - 1 + outstanding;
    assert!(
        stats.l1d_fills <= read_lines + slack,
        "{} L1D fills for {read_lines} lines read (slack {slack})",
        stats.l1d_fills
    );
    assert!(
        stats.memory_reads <= read_lines + slack,
        "{} DRAM reads for {read_lines} lines read",
        stats.memory_reads
    );
    assert!(stats.streamed_lines >= read_lines - slack);
    assert!(
        stats.streamed_to_memory
            >= read_lines - u64::from(streaming.l2_no_allocate_line) - outstanding,
        "from the L2 threshold on, the lines go to DRAM: {}",
        stats.streamed_to_memory
    );

    // The same copy without the rule fills every destination line too.
    let mut profile = Profile::builtin("a53").unwrap();
    profile.write_streaming = None;
    let mut allocating = MemoryModel::new(profile, 1, ModelOptions::default());
    let without = copy(&mut allocating, COPY_BYTES);
    assert!(
        without.l1d_fills >= 2 * read_lines - outstanding,
        "{} fills without write streaming",
        without.l1d_fills
    );
}

#[test]
fn a_partial_line_or_a_load_of_the_line_being_written_ends_the_mode() {
    // Without the prefetcher, which would fetch some destination lines
    // ahead: the rule alone.
    let mut profile = Profile::builtin("a53").unwrap();
    profile.prefetch = None;
    let mut m = MemoryModel::new(profile, 1, ModelOptions::default());
    let mut now = 0;
    let mut write_line = |m: &mut MemoryModel, line: u64, bytes: u64| {
        for offset in (0..bytes).step_by(16) {
            let access = DataAccess {
                size: 16,
                ..store(DESTINATION + line * 64 + offset)
            };
            now += 1 + m.data_access(0, now, &access);
        }
        now
    };
    // Ten whole lines: the mode is on from the fourth.
    for line in 0..10 {
        write_line(&mut m, line, 64);
    }
    let streamed = m.core_stats(0).streamed_lines;
    assert_eq!(streamed, 7, "lines 3 to 9 were streamed");
    // Half a line (streamed: the mode was on), then whole lines again:
    // the first three allocate, the fourth streams.
    write_line(&mut m, 10, 32);
    for line in 11..15 {
        write_line(&mut m, line, 64);
    }
    assert_eq!(m.core_stats(0).streamed_lines, streamed + 2);
    // Streaming again; a load of the line just written ends it.
    write_line(&mut m, 15, 64);
    let now = write_line(&mut m, 16, 64);
    let fills = m.core_stats(0).l1d_fills;
    m.data_access(0, now, &load(DESTINATION + 16 * 64));
    assert_eq!(
        m.core_stats(0).l1d_fills,
        fills + 1,
        "the load fills the streamed line"
    );
    let streamed = m.core_stats(0).streamed_lines;
    for line in 17..20 {
        write_line(&mut m, line, 64);
    }
    assert_eq!(
        m.core_stats(0).streamed_lines,
        streamed,
        "after the load, three lines allocate again"
    );
}

#[test]
fn a_streamed_line_is_not_answered_as_a_hit_afterwards() {
    for fast_paths in [true, false] {
        let mut m = MemoryModel::new(
            Profile::builtin("a53").unwrap(),
            1,
            ModelOptions {
                fast_paths,
                ..ModelOptions::default()
            },
        );
        let mut now = 0;
        for offset in (0..16 * 64).step_by(16) {
            let access = DataAccess {
                size: 16,
                ..store(DESTINATION + offset)
            };
            now += 1 + m.data_access(0, now, &access);
        }
        let before = *m.core_stats(0);
        assert!(before.streamed_lines > 0);
        // Line 15 was streamed (the prefetcher fetched some lines ahead
        // before the mode began): not in the L1, whatever the path.
        let stall = m.data_access(0, now, &store(DESTINATION + 15 * 64));
        let after = *m.core_stats(0);
        assert_eq!(
            after.l1d_hits, before.l1d_hits,
            "fast paths {fast_paths}: a store to a streamed line is no L1 hit"
        );
        assert_eq!(after.l1d_misses, before.l1d_misses + 1);
        let load_stall = m.data_access(0, now + stall + 1, &load(DESTINATION + 15 * 64));
        assert!(
            load_stall > 0,
            "fast paths {fast_paths}: a load of a streamed line misses the L1"
        );
    }
}

#[test]
fn arm11_003_has_no_write_streaming() {
    assert!(
        Profile::builtin("arm11-003")
            .unwrap()
            .write_streaming
            .is_none()
    );
    let mut m = model("arm11-003", 1);
    let stats = copy(&mut m, 16 << 10);
    assert_eq!(stats.streamed_lines, 0);
}
