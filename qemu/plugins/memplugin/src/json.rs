//! JSON text of a profile and of the model's counters (no serde_json: a few fixed shapes), shared by the plugin and `tandem-memprofile`.

use tandem_memmodel::{CoreStats, WindowCounters};

/// The model's parameters, as the harness's reports and provenance read them.
pub fn profile_json(profile: &tandem_memmodel::Profile) -> String {
    let cache = |g: Option<tandem_memmodel::profile::CacheGeometry>| match g {
        None => "null".to_owned(),
        Some(g) => format!(
            "{{\"size_bytes\": {}, \"ways\": {}, \"sets\": {}, \"line_bytes\": {}, \"hit_ns\": {}, \"replacement\": \"{}\"}}",
            g.size_bytes,
            g.ways,
            g.sets,
            g.line_bytes,
            g.hit_ns,
            g.replacement.word()
        ),
    };
    let t = &profile.tlb;
    format!(
        concat!(
            "{{\"name\": {}, \"hash\": {}, \"description\": {}, ",
            "\"core_clock_mhz\": {}, \"memory_clock_mhz\": {}, ",
            "\"l1d\": {}, \"l1i\": {}, \"l2\": {}, ",
            "\"memory_latency_ns\": {}, \"bus_service_ns\": {}, ",
            "\"coherence_transfer_ns\": {}, \"coherence_upgrade_ns\": {}, ",
            "\"tlb\": {{\"micro_data_entries\": {}, \"micro_instruction_entries\": {}, ",
            "\"main_entries\": {}, \"main_ways\": {}, \"main_hit_ns\": {}, ",
            "\"walk_cache_entries\": {}, \"walk_level_ns\": {}, \"walk_levels_charged\": {}, ",
            "\"micro_replacement\": \"{}\"}}, ",
            "\"mmio_default_ns\": {}, \"prefetch\": {}, \"write_streaming\": {}}}"
        ),
        json_string(&profile.name),
        json_string(&profile.hash()),
        json_string(&profile.description),
        profile.core_clock_mhz,
        profile.memory_clock_mhz,
        cache(Some(profile.l1d)),
        cache(Some(profile.l1i)),
        cache(profile.l2),
        profile.memory_latency_ns,
        profile.bus_service_ns,
        profile.coherence_transfer_ns,
        profile.coherence_upgrade_ns,
        t.micro_data_entries,
        t.micro_instruction_entries,
        t.main_entries,
        t.main_ways,
        t.main_hit_ns,
        t.walk_cache_entries,
        t.walk_level_ns,
        t.walk_levels_charged,
        if t.micro_fifo { "fifo" } else { "lru" },
        profile.mmio_default_ns,
        match profile.prefetch {
            None => "null".to_owned(),
            Some(p) => {
                let fields: Vec<String> = p
                    .fields()
                    .iter()
                    .map(|(k, v)| format!("\"{k}\": {v}"))
                    .collect();
                format!("{{{}}}", fields.join(", "))
            }
        },
        match profile.write_streaming {
            None => "null".to_owned(),
            Some(w) => format!(
                "{{\"l1_no_allocate_line\": {}, \"l2_no_allocate_line\": {}}}",
                w.l1_no_allocate_line, w.l2_no_allocate_line
            ),
        },
    )
}

/// One core's counters as a JSON object.
pub fn core_stats_json(s: &CoreStats) -> String {
    let fields: [(&str, u64); 35] = [
        ("loads", s.loads),
        ("stores", s.stores),
        ("blocks", s.blocks),
        ("device_accesses", s.device_accesses),
        ("l1d_hits", s.l1d_hits),
        ("l1d_misses", s.l1d_misses),
        ("l1i_hits", s.l1i_hits),
        ("l1i_misses", s.l1i_misses),
        ("l2_hits", s.l2_hits),
        ("l2_misses", s.l2_misses),
        ("memory_reads", s.memory_reads),
        ("memory_writebacks", s.memory_writebacks),
        ("bus_wait_ns", s.bus_wait_ns),
        ("bus_booked_wait_ns", s.bus_booked_wait_ns),
        ("bus_deferred_wait_ns", s.bus_deferred_wait_ns),
        (
            "bus_wait_absorbed_by_halts_ns",
            s.bus_wait_absorbed_by_halts_ns,
        ),
        ("coherence_transfers", s.coherence_transfers),
        ("coherence_upgrades", s.coherence_upgrades),
        ("micro_tlb_misses", s.micro_tlb_misses),
        ("main_tlb_misses", s.main_tlb_misses),
        ("walk_cache_hits", s.walk_cache_hits),
        ("walk_reads", s.walk_reads),
        ("walks_read", s.walks_read),
        ("walks_unreadable", s.walks_unreadable),
        ("calls_out_of_order", s.calls_out_of_order),
        ("prefetches", s.prefetches),
        ("prefetch_late", s.prefetch_late),
        ("prefetch_late_wait_ns", s.prefetch_late_wait_ns),
        ("translation_stall_ns", s.translation_stall_ns),
        ("tlbi_received", s.tlbi_received),
        ("l1d_fills", s.l1d_fills),
        ("streamed_lines", s.streamed_lines),
        ("streamed_to_memory", s.streamed_to_memory),
        ("stall_ns", s.stall_ns),
        (
            "translation_stall_share_permille",
            permille(s.translation_stall_ns, s.stall_ns),
        ),
    ];
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("\"{k}\": {v}"))
        .collect();
    format!("{{{}}}", body.join(", "))
}

/// One window a guest marked (`HINT #112` .. `#113`) on `core`, its
/// `index`-th, ending at `to_ns` of the core's time, as a JSON object.
pub fn window_json(core: usize, index: u64, to_ns: u64, c: &WindowCounters) -> String {
    let fields: [(&str, u64); 15] = [
        ("core", core as u64),
        ("index", index),
        ("from_ns", c.from_ns),
        ("to_ns", to_ns),
        ("lane_busy_ns", c.lane_busy_ns),
        ("lane_turn_area_ns2", c.lane_turn_area_ns2),
        ("head_turn_area_ns2", c.head_turn_area_ns2),
        ("lane_backlog_ns", c.lane_backlog_ns),
        ("fills", c.fills),
        ("write_backs", c.write_backs),
        ("walk_reads", c.walk_reads),
        ("read_wait_ns", c.read_wait_ns),
        ("behind_pricings", c.behind_pricings),
        ("behind_priced_ns", c.behind_priced_ns),
        ("behind_settled_ns", c.behind_settled_ns),
    ];
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("\"{k}\": {v}"))
        .collect();
    format!("{{{}}}", body.join(", "))
}

fn permille(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        0
    } else {
        (u128::from(part) * 1000 / u128::from(whole)) as u64
    }
}

/// `text` as a JSON string.
pub fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
