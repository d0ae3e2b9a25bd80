//! Profiles as data: the shipped ones parse, their hash is stable and follows values not comments, and bad profiles are refused with the offending key named.

use tandem_memmodel::profile::BUILTIN_PROFILES;
use tandem_memmodel::{Profile, ProfileError};

fn a53_text() -> &'static str {
    BUILTIN_PROFILES
        .iter()
        .find(|(n, _)| *n == "a53")
        .unwrap()
        .1
}

/// The a53 profile with `from` replaced by `to` (which must occur).
fn edited(from: &str, to: &str) -> Result<Profile, ProfileError> {
    let text = a53_text();
    assert!(text.contains(from), "{from:?} not in a53.toml");
    Profile::from_toml_str(&text.replacen(from, to, 1))
}

fn refused_at(result: Result<Profile, ProfileError>, key: &str) -> String {
    let error = result.expect_err("the profile was accepted");
    let message = error.to_string();
    assert!(message.contains(key), "{message:?} does not name {key}");
    message
}

#[test]
fn the_shipped_profiles_parse_with_the_papers_figures() {
    let a53 = Profile::builtin("a53").unwrap();
    assert_eq!(
        (a53.l1d.size_bytes, a53.l1d.ways, a53.l1d.sets),
        (32768, 4, 128)
    );
    assert_eq!((a53.l1i.ways, a53.l2.unwrap().size_bytes), (2, 512 << 10));
    assert_eq!(
        (
            a53.tlb.micro_data_entries,
            a53.tlb.main_entries,
            a53.tlb.main_ways
        ),
        (10, 512, 4)
    );
    assert_eq!(a53.memory_latency_ns, 100);
    let arm11 = Profile::builtin("arm11-003").unwrap();
    assert!(arm11.l2.is_none());
    assert_eq!((arm11.core_clock_mhz, arm11.memory_clock_mhz), (210, 30));
    assert_eq!((arm11.memory_latency_ns, arm11.bus_service_ns), (56, 56));
    assert!(matches!(
        Profile::builtin("a57"),
        Err(ProfileError::UnknownBuiltin(_))
    ));
}

#[test]
fn the_papers_boards_parse_with_their_figures() {
    // Paper 000's R-Car H1: 1 GHz Cortex-A9, 32 KiB L1, 1 MiB 16-way L2.
    let rcar = Profile::builtin("a9-rcar-h1").unwrap();
    assert_eq!((rcar.core_clock_mhz, rcar.memory_clock_mhz), (1000, 1000));
    assert_eq!(
        (rcar.l1d.size_bytes, rcar.l1d.ways, rcar.l1d.line_bytes),
        (32768, 4, 32)
    );
    let l2 = rcar.l2.unwrap();
    assert_eq!((l2.size_bytes, l2.ways, l2.sets), (1 << 20, 16, 2048));
    assert_eq!(
        (rcar.tlb.micro_data_entries, rcar.tlb.main_entries),
        (32, 128)
    );
    assert_eq!((rcar.memory_latency_ns, rcar.bus_service_ns), (120, 8));
    assert!(rcar.prefetch.is_none());
    // Paper 002's NE1: ARM11 MPCore, no L2, memory cycles of 400 / 133 ns.
    let ne1 = Profile::builtin("arm11-ne1").unwrap();
    assert!(ne1.l2.is_none());
    assert_eq!((ne1.core_clock_mhz, ne1.memory_clock_mhz), (400, 133));
    assert_eq!((ne1.memory_latency_ns, ne1.bus_service_ns), (30, 12));
    assert_eq!((ne1.tlb.micro_data_entries, ne1.tlb.main_entries), (8, 64));
}

#[test]
fn every_shipped_profile_is_named_as_registered_and_distinct() {
    let mut hashes = Vec::new();
    for (name, _) in BUILTIN_PROFILES {
        let profile = Profile::builtin(name).unwrap();
        assert_eq!(profile.name, *name, "{name}.toml names itself otherwise");
        // Memory is slower than the slowest cache, and the bus's share of
        // an access no longer than the access (checked on load; asserted
        // here so a shipped profile cannot pass by a check's removal).
        let slowest = profile.l2.map_or(profile.l1d.hit_ns, |l2| l2.hit_ns);
        assert!(profile.memory_latency_ns > slowest, "{name}");
        assert!(
            profile.bus_service_ns <= profile.memory_latency_ns,
            "{name}"
        );
        hashes.push(profile.hash());
    }
    hashes.sort();
    hashes.dedup();
    assert_eq!(
        hashes.len(),
        BUILTIN_PROFILES.len(),
        "two profiles hash alike"
    );
}

#[test]
fn the_shipped_profiles_give_every_value_a_source() {
    // Every value sits in a block (lines between blank lines) whose
    // comment, above it, says where it comes from.
    for (name, text) in BUILTIN_PROFILES {
        let mut commented = false;
        for line in text.lines().map(str::trim) {
            if line.is_empty() {
                commented = false;
            } else if line.starts_with('#') {
                commented = true;
            } else if !line.starts_with('[') {
                let key = line.split('=').next().unwrap().trim();
                assert!(
                    commented || key == "name" || key == "description",
                    "{name}: {line:?} has no comment giving its source"
                );
            }
        }
    }
}

#[test]
fn the_hash_is_stable_and_follows_values_not_comments() {
    let a53 = Profile::builtin("a53").unwrap();
    let hash = a53.hash();
    assert!(
        hash.starts_with("fnv1a64:") && hash.len() == 8 + 16,
        "{hash}"
    );
    assert_eq!(Profile::builtin("a53").unwrap().hash(), hash);
    let recommented = Profile::from_toml_str(&a53_text().replace("# ", "#  ")).unwrap();
    assert_eq!(recommented.hash(), hash);
    let changed = edited("latency_cycles = 100", "latency_cycles = 101").unwrap();
    assert_ne!(changed.hash(), hash);
    assert_ne!(Profile::builtin("arm11-003").unwrap().hash(), hash);
    assert!(a53.canonical().contains("memory_latency_ns=100\n"));
}

#[test]
fn bad_profiles_are_refused_with_the_key_named() {
    // 24 KiB in 4 ways of 64 bytes: 96 sets.
    let message = refused_at(
        edited(
            "size_bytes = 32768\nways = 4",
            "size_bytes = 24576\nways = 4",
        ),
        "l1d.size_bytes",
    );
    assert!(message.contains("96 sets, not a power of two"), "{message}");
    refused_at(
        edited(
            "size_bytes = 32768\nways = 4",
            "size_bytes = 30000\nways = 4",
        ),
        "l1d.size_bytes",
    );
    refused_at(
        edited(
            "line_bytes = 64\n# TRM: 3-cycle",
            "line_bytes = 48\n# TRM: 3-cycle",
        ),
        "l1d.line_bytes",
    );
    refused_at(edited("ways = 2", "ways = 0"), "l1i.ways");
    refused_at(
        edited("line_bytes = 64\n# Fetch", "line_bytes = 32\n# Fetch"),
        "l1i.line_bytes",
    );
    refused_at(
        edited("service_cycles = 10", "service_cycles = 200"),
        "memory.service_cycles",
    );
    refused_at(
        edited("latency_cycles = 100", "latency_cycles = 10"),
        "memory.latency_cycles",
    );
    refused_at(
        edited(
            "equal to the core's.\nclock_mhz = 1000",
            "equal to the core's.\nclock_mhz = 2000",
        ),
        "memory.clock_mhz",
    );
    refused_at(
        edited("main_entries = 512", "main_entries = 500"),
        "tlb.main_entries",
    );
    refused_at(
        edited("micro_data_entries = 10", "micro_data_entries = 0"),
        "tlb.micro_data_entries",
    );
    refused_at(
        edited("base = 0x090C_0000", "base = 0x0900_0800"),
        "overlap",
    );
    refused_at(edited("name = \"a53\"", "name = \"a 53\""), "name");
    // Not the schema: an unknown key, a missing table, a wrong type.
    refused_at(
        edited("hit_cycles = 13", "hit_cycles = 13\nhit_cylces = 3"),
        "hit_cylces",
    );
    refused_at(edited("[coherence]", "[coherency]"), "coherency");
    refused_at(edited("ways = 16", "ways = \"16\""), "ways");
    assert!(matches!(
        Profile::from_toml_str("name = "),
        Err(ProfileError::Syntax(_))
    ));
}

#[test]
fn a_profile_is_named_by_its_builtin_name_or_its_file() {
    assert_eq!(
        Profile::named("a53").unwrap(),
        Profile::builtin("a53").unwrap()
    );
    let path = std::env::temp_dir().join(format!("tandem-memmodel-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        a53_text().replacen("hit_cycles = 13", "hit_cycles = 14", 1),
    )
    .unwrap();
    let from_file = Profile::named(path.to_str().unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(from_file.l2.unwrap().hit_ns, 14);
    assert_ne!(from_file.hash(), Profile::builtin("a53").unwrap().hash());
    assert!(matches!(
        Profile::named("a57"),
        Err(ProfileError::UnknownBuiltin(_))
    ));
    assert!(matches!(
        Profile::named("/nonexistent/p.toml"),
        Err(ProfileError::Io(_))
    ));
}
