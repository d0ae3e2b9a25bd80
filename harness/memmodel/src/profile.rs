//! Memory profiles as data: the TOML schema, its validation into a checked [`Profile`], and the profile's stable hash.
//!
//! A profile file gives every latency in cycles of the clock it belongs to
//! (core cycles for the caches and TLBs, memory-clock cycles for the bus and
//! DRAM). The model runs in nanoseconds of per-core time, where one
//! instruction takes 1 ns: one core cycle is therefore taken as 1 ns, and a
//! memory-clock cycle as `core.clock_mhz / memory.clock_mhz` ns. That keeps
//! the ratio of memory to core speed of the profiled board (210:30 for
//! `arm11-003`) while the core itself runs at the model's one instruction
//! per ns.

use std::fmt;
use std::path::Path;

use serde::Deserialize;

/// The profiles shipped with the crate, by name, as their TOML text.
pub const BUILTIN_PROFILES: &[(&str, &str)] = &[
    ("a53", include_str!("../profiles/a53.toml")),
    ("arm11-003", include_str!("../profiles/arm11-003.toml")),
    ("a9-rcar-h1", include_str!("../profiles/a9-rcar-h1.toml")),
    ("arm11-ne1", include_str!("../profiles/arm11-ne1.toml")),
];

/// Why a profile was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileError {
    /// The text is not TOML, or not this schema (an unknown or missing key,
    /// a value of the wrong type).
    Syntax(String),
    /// The file could not be read.
    Io(String),
    /// A value is out of range or inconsistent with another.
    Invalid {
        /// The key, as `table.key`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No built-in profile has that name.
    UnknownBuiltin(String),
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax(message) => write!(f, "not a memory profile: {message}"),
            Self::Io(message) => write!(f, "cannot read the profile: {message}"),
            Self::Invalid { field, reason } => write!(f, "{field}: {reason}"),
            Self::UnknownBuiltin(name) => {
                let known: Vec<&str> = BUILTIN_PROFILES.iter().map(|(n, _)| *n).collect();
                write!(
                    f,
                    "no built-in memory profile {name:?} (known: {})",
                    known.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for ProfileError {}

fn invalid(field: &str, reason: impl Into<String>) -> ProfileError {
    ProfileError::Invalid {
        field: field.to_owned(),
        reason: reason.into(),
    }
}

// ---------------------------------------------------------------------------
// The file's schema, as written.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: String,
    description: String,
    core: CoreSection,
    memory: MemorySection,
    l1d: CacheSection,
    l1i: CacheSection,
    l2: Option<CacheSection>,
    coherence: CoherenceSection,
    tlb: TlbSection,
    mmio: MmioSection,
    prefetch: Option<PrefetchSection>,
    write_streaming: Option<WriteStreamingSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteStreamingSection {
    l1_no_allocate_line: u64,
    l2_no_allocate_line: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PrefetchSection {
    streams: u64,
    outstanding: u64,
    consecutive_trigger: u64,
    strided_trigger: u64,
    max_stride_lines: u64,
    page_bytes: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CoreSection {
    clock_mhz: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemorySection {
    clock_mhz: u64,
    latency_cycles: u64,
    service_cycles: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheSection {
    size_bytes: u64,
    ways: u64,
    line_bytes: u64,
    hit_cycles: u64,
    #[serde(default)]
    replacement: ReplacementWord,
}

/// A cache's `replacement` as written.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug, Default)]
#[serde(rename_all = "lowercase")]
enum ReplacementWord {
    #[default]
    Lru,
    Random,
}

/// A micro TLB's `micro_replacement` as written.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug, Default)]
#[serde(rename_all = "lowercase")]
enum MicroReplacementWord {
    #[default]
    Lru,
    Fifo,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CoherenceSection {
    transfer_cycles: u64,
    upgrade_cycles: u64,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum WalkEntry {
    L1d,
    L2,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TlbSection {
    micro_data_entries: u64,
    micro_instruction_entries: u64,
    main_entries: u64,
    main_ways: u64,
    main_hit_cycles: u64,
    walk_cache_entries: u64,
    walk_cache_ways: u64,
    walk_level_cycles: u64,
    walk_levels_charged: u64,
    walk_enters: WalkEntry,
    flush_micro_on_context_write: bool,
    tlbi_local_cycles: u64,
    tlbi_broadcast_cycles: u64,
    #[serde(default)]
    micro_replacement: MicroReplacementWord,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MmioSection {
    default_cycles: u64,
    #[serde(default)]
    device: Vec<DeviceSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceSection {
    name: String,
    base: u64,
    size: u64,
    cycles: u64,
}

// ---------------------------------------------------------------------------
// The checked profile.

/// One cache's shape and hit cost, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheGeometry {
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Associativity.
    pub ways: usize,
    /// Number of sets: a power of two.
    pub sets: usize,
    /// Line size in bytes: a power of two, the same for every cache.
    pub line_bytes: u64,
    /// Stall of an access that hits here, in ns (see the crate's docs for
    /// why an L1 hit may cost 0).
    pub hit_ns: u64,
    /// Which way a fill replaces in a full set.
    pub replacement: Replacement,
}

/// How a cache chooses the way a fill replaces when its set is full (an
/// empty way is always taken first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replacement {
    /// The least recently used: every hit reorders the set.
    Lru,
    /// A pseudo-random way, from a fixed generator per cache (the same
    /// choices in every run): a hit changes nothing.
    Random,
}

impl Replacement {
    /// The profile's word for it.
    pub fn word(self) -> &'static str {
        match self {
            Self::Lru => "lru",
            Self::Random => "random",
        }
    }
}

/// Where a page walk's descriptor reads enter the cache hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkEntryLevel {
    /// Through the walking core's L1 data cache (allocating there).
    L1Data,
    /// Straight to the shared L2 (or memory when there is none).
    L2,
}

/// The TLBs' shape and costs, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlbProfile {
    /// Entries of the fully associative micro TLB on the data side.
    pub micro_data_entries: usize,
    /// Entries of the fully associative micro TLB on the instruction side.
    pub micro_instruction_entries: usize,
    /// Entries of the unified main TLB.
    pub main_entries: usize,
    /// Its associativity.
    pub main_ways: usize,
    /// Stall of a micro TLB miss (the main TLB's lookup), in ns.
    pub main_hit_ns: u64,
    /// Entries of the walk cache (0: none).
    pub walk_cache_entries: usize,
    /// Its associativity.
    pub walk_cache_ways: usize,
    /// Fixed stall per descriptor read of a walk (the walker's own
    /// lookup and the read's load-to-use), in ns; a read that misses the
    /// cache it enters adds that miss's cost.
    pub walk_level_ns: u64,
    /// Only the deepest this many levels of a walk are read and charged
    /// (0: every level the translation tables have).
    pub walk_levels_charged: u32,
    /// Where descriptor reads enter the caches.
    pub walk_enters: WalkEntryLevel,
    /// Whether writing a translation table base or TCR empties the micro TLBs.
    pub flush_micro_on_context_write: bool,
    /// Stall of a TLBI that stays on its core, in ns.
    pub tlbi_local_ns: u64,
    /// Stall of a TLBI broadcast to the inner-shareable domain, in ns.
    pub tlbi_broadcast_ns: u64,
    /// The micro TLBs replace first in, first out (a hit changes nothing),
    /// not the least recently used.
    pub micro_fifo: bool,
}

/// The L1 data prefetcher, checked: it watches a core's data linefills for
/// streams of lines a fixed stride apart and fetches ahead of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefetchProfile {
    /// Streams tracked at once.
    pub streams: usize,
    /// Prefetches in flight at most, per core; also how many lines ahead
    /// of the last demand access a stream fetches.
    pub outstanding: usize,
    /// Linefills to consecutive lines (stride ±1) that start a stream.
    pub consecutive_trigger: u32,
    /// Linefills a fixed stride of more than one line apart that start one.
    pub strided_trigger: u32,
    /// The largest stride recognised, in lines (either direction).
    pub max_stride_lines: u64,
    /// Prefetches never cross a boundary of this many bytes (physical
    /// pages: the next physical page is unrelated memory).
    pub page_bytes: u64,
}

impl PrefetchProfile {
    /// Every value by its key in the profile file, in the file's order.
    pub fn fields(&self) -> [(&'static str, u64); 6] {
        [
            ("streams", self.streams as u64),
            ("outstanding", self.outstanding as u64),
            ("consecutive_trigger", u64::from(self.consecutive_trigger)),
            ("strided_trigger", u64::from(self.strided_trigger)),
            ("max_stride_lines", self.max_stride_lines),
            ("page_bytes", self.page_bytes),
        ]
    }
}

/// Write streaming (the A53's "read allocate mode"), checked: after a run
/// of stores that write whole lines, a store that misses the L1 writes
/// past it without allocating a line; the run ends with a line left
/// partly written or a load of the line being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteStreamingProfile {
    /// The first line of a run that does not allocate in the L1 (the A53's
    /// "Nth consecutive streaming cache line does not allocate"): lines
    /// before it do.
    pub l1_no_allocate_line: u32,
    /// The first line of a run that allocates in neither the L1 nor the L2
    /// (at least `l1_no_allocate_line`).
    pub l2_no_allocate_line: u32,
}

/// A memory-mapped device with a fixed access cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// Its name, for reports.
    pub name: String,
    /// First physical address.
    pub base: u64,
    /// Size of its range in bytes.
    pub size: u64,
    /// Stall of one access, in ns.
    pub access_ns: u64,
}

/// A validated memory profile, every cost converted to ns of per-core time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// Its name (`a53`, `arm11-003`, `a9-rcar-h1`, `arm11-ne1`).
    pub name: String,
    /// One line on what it stands for.
    pub description: String,
    /// The profiled core's clock, in MHz.
    pub core_clock_mhz: u64,
    /// The bus and DRAM clock, in MHz.
    pub memory_clock_mhz: u64,
    /// Per-core L1 data cache.
    pub l1d: CacheGeometry,
    /// Per-core L1 instruction cache.
    pub l1i: CacheGeometry,
    /// Shared L2, if the profile has one.
    pub l2: Option<CacheGeometry>,
    /// Stall of a load served by DRAM with the bus idle, in ns.
    pub memory_latency_ns: u64,
    /// Time the shared bus is busy with one line, in ns (at most the latency).
    pub bus_service_ns: u64,
    /// Stall of a miss served by another core's L1, in ns.
    pub coherence_transfer_ns: u64,
    /// Stall of a store to a line other cores share (their copies invalidated), in ns.
    pub coherence_upgrade_ns: u64,
    /// The TLBs.
    pub tlb: TlbProfile,
    /// Stall of an access to an I/O address in no listed device, in ns.
    pub mmio_default_ns: u64,
    /// Devices with their own access cost, sorted by base, disjoint.
    pub devices: Vec<Device>,
    /// The L1 data prefetcher, if the profile has one.
    pub prefetch: Option<PrefetchProfile>,
    /// Write streaming, if the profile has it (else every store miss
    /// allocates).
    pub write_streaming: Option<WriteStreamingProfile>,
}

impl Profile {
    /// Parses and checks a profile's TOML text.
    pub fn from_toml_str(text: &str) -> Result<Self, ProfileError> {
        let file: File = toml::from_str(text).map_err(|e| ProfileError::Syntax(e.to_string()))?;
        Self::check(file)
    }

    /// Reads, parses and checks a profile file.
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ProfileError::Io(format!("{}: {e}", path.display())))?;
        Self::from_toml_str(&text)
    }

    /// A profile as `--memmodel` names it: a path to a TOML file (with a
    /// `/` or ending in `.toml`), else one of [`BUILTIN_PROFILES`].
    pub fn named(spec: &str) -> Result<Self, ProfileError> {
        if spec.contains('/') || spec.ends_with(".toml") {
            Self::load(Path::new(spec))
        } else {
            Self::builtin(spec)
        }
    }

    /// One of [`BUILTIN_PROFILES`], by name.
    pub fn builtin(name: &str) -> Result<Self, ProfileError> {
        let (_, text) = BUILTIN_PROFILES
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| ProfileError::UnknownBuiltin(name.to_owned()))?;
        Self::from_toml_str(text)
    }

    fn check(file: File) -> Result<Self, ProfileError> {
        if file.name.is_empty()
            || !file
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(invalid(
                "name",
                format!("{:?} is not letters, digits, '-' and '_'", file.name),
            ));
        }
        let core_mhz = file.core.clock_mhz;
        let memory_mhz = file.memory.clock_mhz;
        if core_mhz == 0 || core_mhz > 100_000 {
            return Err(invalid("core.clock_mhz", "must be 1..=100000"));
        }
        if memory_mhz == 0 || memory_mhz > core_mhz {
            return Err(invalid(
                "memory.clock_mhz",
                format!("must be 1..={core_mhz} (at most the core's clock)"),
            ));
        }
        let memory_cycles_to_ns = |cycles: u64| -> u64 {
            // Rounded to the nearest ns: one core cycle is the model's 1 ns.
            (cycles * core_mhz + memory_mhz / 2) / memory_mhz
        };

        let l1d = check_cache("l1d", &file.l1d)?;
        let l1i = check_cache("l1i", &file.l1i)?;
        let l2 = match &file.l2 {
            Some(section) => Some(check_cache("l2", section)?),
            None => None,
        };
        for (field, geometry) in [("l1i.line_bytes", Some(l1i)), ("l2.line_bytes", l2)] {
            if let Some(geometry) = geometry
                && geometry.line_bytes != l1d.line_bytes
            {
                return Err(invalid(
                    field,
                    format!(
                        "{} differs from l1d.line_bytes {}: the model moves whole lines \
                         between levels, so every cache has one line size",
                        geometry.line_bytes, l1d.line_bytes
                    ),
                ));
            }
        }
        if let Some(l2) = l2
            && l2.hit_ns < l1d.hit_ns
        {
            return Err(invalid("l2.hit_cycles", "is below l1d.hit_cycles"));
        }

        if file.memory.latency_cycles == 0 {
            return Err(invalid("memory.latency_cycles", "must be at least 1"));
        }
        if file.memory.service_cycles == 0 {
            return Err(invalid("memory.service_cycles", "must be at least 1"));
        }
        if file.memory.service_cycles > file.memory.latency_cycles {
            return Err(invalid(
                "memory.service_cycles",
                format!(
                    "{} exceeds memory.latency_cycles {}: the bus's share of an access \
                     cannot be longer than the access",
                    file.memory.service_cycles, file.memory.latency_cycles
                ),
            ));
        }
        let memory_latency_ns = memory_cycles_to_ns(file.memory.latency_cycles);
        let bus_service_ns = memory_cycles_to_ns(file.memory.service_cycles).max(1);
        let slowest_cache_hit = l2.map_or(l1d.hit_ns, |l2| l2.hit_ns);
        if memory_latency_ns <= slowest_cache_hit {
            return Err(invalid(
                "memory.latency_cycles",
                format!(
                    "{memory_latency_ns} ns is not slower than the last cache's hit \
                     ({slowest_cache_hit} ns)"
                ),
            ));
        }

        let tlb = check_tlb(&file.tlb)?;
        let devices = check_devices(&file.mmio.device)?;
        let prefetch = match &file.prefetch {
            Some(section) => Some(check_prefetch(section, l1d.line_bytes)?),
            None => None,
        };
        let write_streaming = match &file.write_streaming {
            Some(section) => Some(check_write_streaming(section, l1d.line_bytes)?),
            None => None,
        };

        Ok(Self {
            name: file.name,
            description: file.description,
            core_clock_mhz: core_mhz,
            memory_clock_mhz: memory_mhz,
            l1d,
            l1i,
            l2,
            memory_latency_ns,
            bus_service_ns,
            coherence_transfer_ns: file.coherence.transfer_cycles,
            coherence_upgrade_ns: file.coherence.upgrade_cycles,
            tlb,
            mmio_default_ns: file.mmio.default_cycles,
            devices,
            prefetch,
            write_streaming,
        })
    }

    /// A hash of every value the model uses (not of the file's text:
    /// comments and layout do not change it), as `fnv1a64:` and 16 hex
    /// digits. The same on every host and build, for provenance.
    pub fn hash(&self) -> String {
        format!("fnv1a64:{:016x}", fnv1a64(self.canonical().as_bytes()))
    }

    /// Every value as `key=value` lines in a fixed order: what [`Self::hash`] hashes.
    pub fn canonical(&self) -> String {
        let mut lines = vec![
            format!("name={}", self.name),
            format!("core_clock_mhz={}", self.core_clock_mhz),
            format!("memory_clock_mhz={}", self.memory_clock_mhz),
        ];
        let mut cache = |label: &str, geometry: Option<CacheGeometry>| match geometry {
            // The policy only when not LRU: a profile that does not name
            // one keeps the hash it had before policies could be named.
            Some(g) => {
                let mut line = format!(
                    "{label}={},{},{},{},{}",
                    g.size_bytes, g.ways, g.sets, g.line_bytes, g.hit_ns
                );
                if g.replacement != Replacement::Lru {
                    line += &format!(",{}", g.replacement.word());
                }
                lines.push(line);
            }
            None => lines.push(format!("{label}=none")),
        };
        cache("l1d", Some(self.l1d));
        cache("l1i", Some(self.l1i));
        cache("l2", self.l2);
        let t = &self.tlb;
        lines.extend([
            format!("memory_latency_ns={}", self.memory_latency_ns),
            format!("bus_service_ns={}", self.bus_service_ns),
            format!("coherence_transfer_ns={}", self.coherence_transfer_ns),
            format!("coherence_upgrade_ns={}", self.coherence_upgrade_ns),
            format!(
                "tlb={},{},{},{},{},{},{},{},{},{:?},{},{},{}",
                t.micro_data_entries,
                t.micro_instruction_entries,
                t.main_entries,
                t.main_ways,
                t.main_hit_ns,
                t.walk_cache_entries,
                t.walk_cache_ways,
                t.walk_level_ns,
                t.walk_levels_charged,
                t.walk_enters,
                t.flush_micro_on_context_write,
                t.tlbi_local_ns,
                t.tlbi_broadcast_ns
            ) + if t.micro_fifo { ",fifo" } else { "" },
            format!("mmio_default_ns={}", self.mmio_default_ns),
        ]);
        for d in &self.devices {
            lines.push(format!(
                "device={},{:#x},{:#x},{}",
                d.name, d.base, d.size, d.access_ns
            ));
        }
        // Absent from the canonical text when absent from the profile, so
        // a profile without one keeps the hash it had before prefetchers.
        if let Some(p) = &self.prefetch {
            let values: Vec<String> = p.fields().iter().map(|(_, v)| v.to_string()).collect();
            lines.push(format!("prefetch={}", values.join(",")));
        }
        // Likewise: a profile without write streaming keeps its hash.
        if let Some(w) = &self.write_streaming {
            lines.push(format!(
                "write_streaming={},{}",
                w.l1_no_allocate_line, w.l2_no_allocate_line
            ));
        }
        let mut text = lines.join("\n");
        text.push('\n');
        text
    }
}

/// FNV-1a, 64 bits: small, fixed and the same everywhere, which is all a
/// provenance stamp needs (it is not a defence against forgery).
fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

fn check_cache(table: &str, section: &CacheSection) -> Result<CacheGeometry, ProfileError> {
    let field = |key: &str| format!("{table}.{key}");
    let line = section.line_bytes;
    if !line.is_power_of_two() || !(8..=4096).contains(&line) {
        return Err(invalid(
            &field("line_bytes"),
            format!("{line} is not a power of two in 8..=4096"),
        ));
    }
    if section.ways == 0 || section.ways > 64 {
        return Err(invalid(
            &field("ways"),
            format!("{} is not in 1..=64", section.ways),
        ));
    }
    let way_bytes = section.ways * line;
    if section.size_bytes == 0 || !section.size_bytes.is_multiple_of(way_bytes) {
        return Err(invalid(
            &field("size_bytes"),
            format!(
                "{} is not a multiple of ways × line_bytes = {way_bytes}",
                section.size_bytes
            ),
        ));
    }
    let sets = section.size_bytes / way_bytes;
    if !sets.is_power_of_two() {
        return Err(invalid(
            &field("size_bytes"),
            format!(
                "{} bytes in {} ways of {line}-byte lines make {sets} sets, not a power of two",
                section.size_bytes, section.ways
            ),
        ));
    }
    if section.size_bytes > 1 << 30 {
        return Err(invalid(&field("size_bytes"), "is over 1 GiB"));
    }
    Ok(CacheGeometry {
        size_bytes: section.size_bytes,
        ways: section.ways as usize,
        sets: sets as usize,
        line_bytes: line,
        hit_ns: section.hit_cycles,
        replacement: match section.replacement {
            ReplacementWord::Lru => Replacement::Lru,
            ReplacementWord::Random => Replacement::Random,
        },
    })
}

fn check_prefetch(section: &PrefetchSection, line: u64) -> Result<PrefetchProfile, ProfileError> {
    let in_range = |key: &str, value: u64, low: u64, high: u64| {
        if (low..=high).contains(&value) {
            Ok(value)
        } else {
            Err(invalid(
                &format!("prefetch.{key}"),
                format!("{value} is not in {low}..={high}"),
            ))
        }
    };
    let streams = in_range("streams", section.streams, 1, 8)?;
    let outstanding = in_range("outstanding", section.outstanding, 1, 16)?;
    let consecutive = in_range("consecutive_trigger", section.consecutive_trigger, 2, 16)?;
    let strided = in_range("strided_trigger", section.strided_trigger, 2, 16)?;
    let max_stride = in_range("max_stride_lines", section.max_stride_lines, 1, 64)?;
    let page = section.page_bytes;
    if !page.is_power_of_two() || page < 2 * line || page > 1 << 30 {
        return Err(invalid(
            "prefetch.page_bytes",
            format!(
                "{page} is not a power of two from two lines ({}) to 1 GiB",
                2 * line
            ),
        ));
    }
    Ok(PrefetchProfile {
        streams: streams as usize,
        outstanding: outstanding as usize,
        consecutive_trigger: consecutive as u32,
        strided_trigger: strided as u32,
        max_stride_lines: max_stride,
        page_bytes: page,
    })
}

fn check_write_streaming(
    section: &WriteStreamingSection,
    line: u64,
) -> Result<WriteStreamingProfile, ProfileError> {
    // The model tells a whole line by one bit per byte.
    if line > 64 {
        return Err(invalid(
            "write_streaming",
            format!("needs lines of at most 64 bytes (l1d.line_bytes is {line})"),
        ));
    }
    let l1 = section.l1_no_allocate_line;
    if !(1..=1 << 20).contains(&l1) {
        return Err(invalid(
            "write_streaming.l1_no_allocate_line",
            format!("{l1} is not in 1..=1048576"),
        ));
    }
    let l2 = section.l2_no_allocate_line;
    if !(l1..=1 << 20).contains(&l2) {
        return Err(invalid(
            "write_streaming.l2_no_allocate_line",
            format!("{l2} is not in {l1}..=1048576 (from the L1's threshold on)"),
        ));
    }
    Ok(WriteStreamingProfile {
        l1_no_allocate_line: l1 as u32,
        l2_no_allocate_line: l2 as u32,
    })
}

fn check_tlb(section: &TlbSection) -> Result<TlbProfile, ProfileError> {
    for (key, entries) in [
        ("tlb.micro_data_entries", section.micro_data_entries),
        (
            "tlb.micro_instruction_entries",
            section.micro_instruction_entries,
        ),
    ] {
        if entries == 0 || entries > 256 {
            return Err(invalid(key, format!("{entries} is not in 1..=256")));
        }
    }
    let sets = |entries_key: &str, entries: u64, ways_key: &str, ways: u64, allow_zero: bool| {
        if entries == 0 && allow_zero {
            return Ok(());
        }
        if ways == 0 || ways > 64 {
            return Err(invalid(ways_key, format!("{ways} is not in 1..=64")));
        }
        if entries == 0 || !entries.is_multiple_of(ways) || !(entries / ways).is_power_of_two() {
            return Err(invalid(
                entries_key,
                format!(
                    "{entries} entries in {ways} ways do not make a power-of-two number of sets"
                ),
            ));
        }
        if entries > 1 << 16 {
            return Err(invalid(entries_key, "is over 65536"));
        }
        Ok(())
    };
    sets(
        "tlb.main_entries",
        section.main_entries,
        "tlb.main_ways",
        section.main_ways,
        false,
    )?;
    sets(
        "tlb.walk_cache_entries",
        section.walk_cache_entries,
        "tlb.walk_cache_ways",
        section.walk_cache_ways,
        true,
    )?;
    if section.walk_levels_charged > 4 {
        return Err(invalid(
            "tlb.walk_levels_charged",
            format!(
                "{} is not in 0..=4 (0: all levels)",
                section.walk_levels_charged
            ),
        ));
    }
    Ok(TlbProfile {
        micro_data_entries: section.micro_data_entries as usize,
        micro_instruction_entries: section.micro_instruction_entries as usize,
        main_entries: section.main_entries as usize,
        main_ways: section.main_ways as usize,
        main_hit_ns: section.main_hit_cycles,
        walk_cache_entries: section.walk_cache_entries as usize,
        walk_cache_ways: section.walk_cache_ways.max(1) as usize,
        walk_level_ns: section.walk_level_cycles,
        walk_levels_charged: section.walk_levels_charged as u32,
        walk_enters: match section.walk_enters {
            WalkEntry::L1d => WalkEntryLevel::L1Data,
            WalkEntry::L2 => WalkEntryLevel::L2,
        },
        flush_micro_on_context_write: section.flush_micro_on_context_write,
        tlbi_local_ns: section.tlbi_local_cycles,
        tlbi_broadcast_ns: section.tlbi_broadcast_cycles,
        micro_fifo: section.micro_replacement == MicroReplacementWord::Fifo,
    })
}

fn check_devices(sections: &[DeviceSection]) -> Result<Vec<Device>, ProfileError> {
    let mut devices: Vec<Device> = Vec::with_capacity(sections.len());
    for (index, section) in sections.iter().enumerate() {
        let field = |key: &str| format!("mmio.device[{index}].{key}");
        if section.name.is_empty() {
            return Err(invalid(&field("name"), "is empty"));
        }
        if section.size == 0 {
            return Err(invalid(&field("size"), "is 0"));
        }
        if section.base.checked_add(section.size).is_none() {
            return Err(invalid(
                &field("size"),
                "runs past the end of the address space",
            ));
        }
        devices.push(Device {
            name: section.name.clone(),
            base: section.base,
            size: section.size,
            access_ns: section.cycles,
        });
    }
    devices.sort_by_key(|d| d.base);
    for pair in devices.windows(2) {
        if pair[0].base + pair[0].size > pair[1].base {
            return Err(invalid(
                "mmio.device",
                format!("{} and {} overlap", pair[0].name, pair[1].name),
            ));
        }
    }
    Ok(devices)
}
