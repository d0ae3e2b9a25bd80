//! The memory model proper: per-core L1s and TLBs, the shared L2 and bus, and the stall each access, block fetch and rare instruction costs its core.

use crate::bus::{BusStats, Transfer, WindowCounters};
use crate::cache::{Cache, LineState};
use crate::decode::{Tlbi, TlbiOperation};
use crate::pages::{PageCache, Resolution, TranslationContext};
use crate::prefetch::Prefetcher;
use crate::profile::{Profile, Replacement, WalkEntryLevel, WriteStreamingProfile};
use crate::tlb::{AsidScope, Invalidation, Mapping, MicroTlb, SetTlb, Space, SpaceId};
use crate::translation::{
    ExceptionLevel, Half, NoTables, Registers, TableReader, TranslationRegister, synthetic_table,
};
use crate::weave::Weave;

/// Settings of the model that are not the hardware's but the simulation's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelOptions {
    /// How far a running core's clock can lag another's: the quantum plus
    /// the stalls of a block. A core whose last call lies further behind is
    /// taken as halted (it will not contend for the bus meanwhile).
    pub max_skew_ns: u64,
    /// Answer a core's repeat of its last access or block fetch, when that
    /// can only be a hit that changes nothing but counters, without the
    /// lookups (`MemoryModel::repeat_data`): the same stalls and counters,
    /// faster. Off only to check exactly that (`tests/fast_paths.rs`).
    pub fast_paths: bool,
    /// [`MemoryModel::access`] resolves every access past the filter, even
    /// one its page cache answers, and returns a [`TranslationMismatch`]
    /// when the two differ (the plugin's `verify=hwaddr`). The stalls are
    /// the same either way.
    pub verify_translations: bool,
}

impl Default for ModelOptions {
    /// A skew of 4 µs: four times the default 1 µs quantum.
    fn default() -> Self {
        Self {
            max_skew_ns: 4_000,
            fast_paths: true,
            verify_translations: false,
        }
    }
}

/// A load or a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessKind {
    /// A read.
    Load,
    /// A write.
    Store,
}

/// One data access, as a plugin's memory callback sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataAccess {
    /// The virtual address (for the TLBs).
    pub virtual_address: u64,
    /// The physical address (for the caches and the device ranges).
    pub physical_address: u64,
    /// Bytes accessed (an access that crosses a line touches both lines).
    pub size: u32,
    /// Load or store.
    pub kind: AccessKind,
    /// The exception level the access is made at (its translation regime).
    pub el: ExceptionLevel,
    /// QEMU says the address is I/O (`qemu_plugin_hwaddr_is_io`): an
    /// access in no listed device then costs the profile's default.
    pub io: bool,
}

/// One data access as the shell sees it, by virtual address: the model
/// finds its physical address ([`MemoryModel::access`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VirtualAccess {
    /// The virtual address.
    pub virtual_address: u64,
    /// Bytes accessed (an access that crosses a line touches both lines).
    pub size: u32,
    /// Load or store.
    pub kind: AccessKind,
    /// The exception level the access is made at (its translation regime).
    pub el: ExceptionLevel,
    /// The translation it goes through, for the page cache.
    pub context: TranslationContext,
}

/// The page cache's physical address of an access differs from the one
/// the shell resolved (only with [`ModelOptions::verify_translations`]):
/// the model kept a translation it should have forgotten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TranslationMismatch {
    /// The access's virtual address.
    pub virtual_address: u64,
    /// The physical address the page cache gave.
    pub cached: u64,
    /// What the shell resolved (the virtual address itself, not I/O, when
    /// it could not resolve it).
    pub resolved: Resolution,
}

/// One execution of a translation block: its instructions are fetched
/// through the L1 instruction cache once per execution, not per instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockFetch {
    /// The block's first virtual address.
    pub virtual_address: u64,
    /// Its physical address (or any address whose low bits are the
    /// physical address's, such as the host address of guest RAM).
    pub physical_address: u64,
    /// The block's length in bytes.
    pub bytes: u32,
    /// The exception level it runs at.
    pub el: ExceptionLevel,
}

/// A rare instruction's effect, as the plugin decodes it (see
/// [`crate::decode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemEvent {
    /// A translation register was written.
    RegisterWrite {
        /// Which.
        register: TranslationRegister,
        /// The value written.
        value: u64,
    },
    /// A TLBI, with its operand register's value (0 if none).
    Tlbi {
        /// The operation and its scope.
        tlbi: Tlbi,
        /// `Xt`: the VA (bits 43:0 = VA\[55:12\]) and ASID (bits 63:48).
        operand: u64,
    },
    /// The core changes world (for a plugin that knows it without seeing
    /// the SCR_EL3 write): the same as writing SCR_EL3.NS.
    WorldSwitch {
        /// The world EL1 and EL0 now run in.
        secure: bool,
    },
}

/// What happened on one core, for reports. `repr(C)`: the counters most
/// calls add to come first, in one host cache line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct CoreStats {
    /// Data loads.
    pub loads: u64,
    /// Data stores.
    pub stores: u64,
    /// Block fetches.
    pub blocks: u64,
    /// Every stall charged to this core, in ns.
    pub stall_ns: u64,
    /// Accesses to devices.
    pub device_accesses: u64,
    /// L1 data hits (lines).
    pub l1d_hits: u64,
    /// L1 data misses (lines).
    pub l1d_misses: u64,
    /// L1 instruction hits (lines).
    pub l1i_hits: u64,
    /// L1 instruction misses (lines).
    pub l1i_misses: u64,
    /// L2 hits from this core.
    pub l2_hits: u64,
    /// L2 misses from this core.
    pub l2_misses: u64,
    /// Lines read from DRAM.
    pub memory_reads: u64,
    /// Dirty lines written back to DRAM because of this core's misses.
    pub memory_writebacks: u64,
    /// Time this core was charged for its DRAM reads' waits for their
    /// slots on the bus, and for its write-backs' waits for a full
    /// eviction buffer, in ns (both parts below).
    pub bus_wait_ns: u64,
    /// The part of `bus_wait_ns` known during the read that pays it (its
    /// slot granted at once, or the part of its wait known when it was
    /// presented: see [`crate::weave`]).
    pub bus_booked_wait_ns: u64,
    /// The part charged later: waits priced once every running core had
    /// passed the slot's start.
    pub bus_deferred_wait_ns: u64,
    /// Waits priced for this core's requests before it halted that its
    /// halt absorbed, not charged (see `Weave::resume`).
    pub bus_wait_absorbed_by_halts_ns: u64,
    /// Misses served from another core's L1.
    pub coherence_transfers: u64,
    /// Stores that invalidated other cores' copies.
    pub coherence_upgrades: u64,
    /// Micro TLB misses.
    pub micro_tlb_misses: u64,
    /// Main TLB misses (walks started).
    pub main_tlb_misses: u64,
    /// Walks that found their last-level table in the walk cache.
    pub walk_cache_hits: u64,
    /// Descriptor reads charged.
    pub walk_reads: u64,
    /// Calls whose time lay before the end of this core's previous call
    /// (its time plus the stall returned): a shell that presents a core's
    /// accesses out of its own time order.
    pub calls_out_of_order: u64,
    /// Lines the prefetcher fetched ahead.
    pub prefetches: u64,
    /// Demand accesses that waited for a line still on its way from a
    /// prefetch, and the ns they waited.
    pub prefetch_late: u64,
    /// See `prefetch_late`.
    pub prefetch_late_wait_ns: u64,
    /// Stall spent translating (TLB lookups and walks), in ns.
    pub translation_stall_ns: u64,
    /// TLB invalidations this core received (its own and broadcast ones).
    pub tlbi_received: u64,
    /// Walks whose every descriptor was read from the guest's tables.
    pub walks_read: u64,
    /// Walks with a descriptor the table reader could not read (outside
    /// RAM, or no reader): the rest of each was derived
    /// ([`crate::translation::synthetic_table`]).
    pub walks_unreadable: u64,
    /// Lines allocated in the L1 data cache (demand fills, prefetches and
    /// descriptor reads through it).
    pub l1d_fills: u64,
    /// Lines stores wrote past the L1 without allocating (write streaming).
    pub streamed_lines: u64,
    /// Of those, lines written to DRAM without allocating in the L2 either.
    pub streamed_to_memory: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Data,
    Instruction,
}

/// One core's part of the model, its most used fields first (`repr(C)`
/// keeps the order): the counters every call adds to and the repeats every
/// call checks share the first host cache lines. Aligned to a host line
/// so that they do (cores lie side by side in a `Vec`, 8-byte aligned
/// and 1128 bytes apart otherwise).
#[repr(C, align(64))]
struct Core {
    stats: CoreStats,
    /// The last data access, if repeating it can only hit in the L1 (see
    /// `MemoryModel::repeat_data`).
    last_data: Option<LastData>,
    /// The last block fetch, if repeating it can only hit.
    last_fetch: Option<BlockFetch>,
    /// Bumped whenever a translation may have changed (see
    /// `Core::forget_repeats`): older filter entries no longer answer.
    filter_epoch: u64,
    /// Data lines whose next load (or store, to a Modified line) is a
    /// plain hit, by virtual line (see `MemoryModel::filtered`); empty
    /// unless the profile's hits change nothing.
    filter: Box<[FilterEntry]>,
    /// Data accesses the filter answered (not a `CoreStats` counter: the
    /// same run without fast paths has none).
    filtered: u64,
    presence: BusPresence,
    micro_data: MicroTlb,
    micro_instruction: MicroTlb,
    l1d: Cache,
    l1i: Cache,
    registers: Registers,
    main_tlb: SetTlb,
    walk_cache: Option<SetTlb>,
    prefetcher: Option<Prefetcher>,
    write_stream: WriteStream,
    /// The physical pages the shell resolved (see [`crate::pages`]).
    pages: PageCache,
}

/// The line a core's stores are writing, for write streaming (profiles
/// with a `[write_streaming]` rule: `MemoryModel::note_store`).
#[derive(Debug, Clone, Copy)]
struct WriteStream {
    /// The physical line the core's last store wrote ([`NO_LINE`]: none).
    line: u64,
    /// Its bytes written since the stores came to it, one bit per byte.
    written: u64,
    /// Lines written whole in a row (the current one included once whole).
    run: u32,
    /// `line` was written past the L1 without allocating.
    streamed: bool,
}

/// [`WriteStream::line`] before any store.
const NO_LINE: u64 = u64::MAX;

impl WriteStream {
    fn new() -> Self {
        Self {
            line: NO_LINE,
            written: 0,
            run: 0,
            streamed: false,
        }
    }
}

/// A data access a core can repeat as a plain L1 hit: the same line,
/// virtual and physical, at the same exception level, its line still in
/// the core's L1 as the most recently used of its set, and the micro TLB's
/// last hit still its page (nothing else touched either since).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LastData {
    virtual_line: u64,
    physical_line: u64,
    el: ExceptionLevel,
    /// The line is Modified: a store changes nothing either.
    modified: bool,
}

/// A data line a core used, and what must still hold for its next access
/// to be a plain L1 hit that changes nothing (see `MemoryModel::filtered`).
///
/// One host cache line: an answer reads the whole entry, and an entry
/// that straddled two lines (64 bytes at 8-byte alignment) cost a second
/// host miss on its last fields (`perf` put 5 % of `on_access` on the
/// `ready_at` check alone).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
struct FilterEntry {
    /// `virtual line << 3 | el << 1 | 1` (0: empty).
    key: u64,
    physical_line: u64,
    /// The L1D slot's fill stamp when it took the line (see `l1d_slot`).
    l1d_stamp: u64,
    /// The micro TLB entry's stamp when it translated the line (see `micro`).
    micro_stamp: u64,
    epoch: u64,
    /// No access to the line waits past this (a fill or prefetch of it
    /// arrives by then).
    ready_at: u64,
    /// The L1D slot holding the line (slots and entries number far fewer
    /// than 2^32: the profile's caches and TLBs are small).
    l1d_slot: u32,
    /// The data micro TLB entry that translated it (`NO_MICRO`: the MMU
    /// was off).
    micro: u32,
}

/// A walk cache entry's flag: its table lies in the non-secure space
/// (table addresses, real or derived, stay below bit 63).
const NON_SECURE_TABLE: u64 = 1 << 63;

/// [`FilterEntry::micro`] when the access's regime had its MMU off.
const NO_MICRO: u32 = u32::MAX;

/// Entries of each core's filter (direct mapped by virtual line).
const FILTER_ENTRIES: usize = 512;

/// What the model knows of a core's calls, to check their time order.
#[derive(Debug, Clone, Copy, Default)]
struct BusPresence {
    /// The end of its last call (its time plus the stall returned).
    last_call_end: u64,
}

impl Core {
    fn clear_micro_tlbs(&mut self) {
        self.micro_data.clear();
        self.micro_instruction.clear();
        self.forget_repeats();
    }

    fn forget_repeats(&mut self) {
        self.last_data = None;
        self.last_fetch = None;
        self.filter_epoch += 1;
    }
}

/// A filter entry's key: a virtual line at an exception level.
#[inline]
fn filter_key(line: u64, el: ExceptionLevel) -> u64 {
    line << 3 | (el as u64) << 1 | 1
}

/// One bit per byte of a line (at most 64 bytes: the profile checks),
/// for `bytes` bytes from byte `first`.
#[inline]
fn byte_mask(first: u64, bytes: u64) -> u64 {
    let ones = if bytes >= 64 {
        u64::MAX
    } else {
        (1 << bytes) - 1
    };
    ones << first
}

/// Notes in `stream` a store of `bytes` bytes from byte `first` of `line`
/// (`whole_line`: the mask of a whole line). Stores leaving a line they
/// did not write whole end the run of whole lines, and so the mode
/// (TRM: "a cacheable write burst that is not a full cache line"); a line
/// made whole adds one to it.
#[inline]
fn note_store_in(stream: &mut WriteStream, whole_line: u64, line: u64, first: u64, bytes: u64) {
    if line != stream.line {
        if stream.line != NO_LINE && stream.written != whole_line {
            stream.run = 0;
        }
        stream.line = line;
        stream.written = 0;
        stream.streamed = false;
    }
    if stream.written != whole_line {
        stream.written |= byte_mask(first, bytes) & whole_line;
        if stream.written == whole_line {
            stream.run = stream.run.saturating_add(1);
        }
    }
}

/// The whole memory system of a machine of `cores` cores under one profile.
///
/// Every method takes the core it runs on and returns the stall in ns to
/// add to that core's clock. Nothing allocates after construction, nothing
/// locks, and nothing depends on anything but the sequence of calls.
pub struct MemoryModel {
    profile: Profile,
    line_shift: u32,
    cores: Vec<Core>,
    l2: Option<Cache>,
    bus: Weave,
    /// What a DRAM read made now is for (a demand miss unless a walk or
    /// the prefetcher is reading).
    read_kind: Transfer,
    fast_paths: bool,
    /// See [`ModelOptions::verify_translations`].
    verify_translations: bool,
    /// The filter answers data hits (fast paths on, and hits that change
    /// nothing: pseudo-random L1D, first-in first-out micro TLBs).
    filter_on: bool,
    /// First and end address of all devices: accesses outside skip the search.
    device_span: (u64, u64),
    /// The profile's write streaming rule, if any.
    write_streaming: Option<WriteStreamingProfile>,
    /// [`WriteStream::written`] of a whole line.
    whole_line: u64,
}

impl MemoryModel {
    /// A model with empty caches and TLBs, every core's MMU off.
    pub fn new(profile: Profile, cores: usize, options: ModelOptions) -> Self {
        let micro = |entries| {
            if profile.tlb.micro_fifo {
                MicroTlb::new_fifo(entries)
            } else {
                MicroTlb::new(entries)
            }
        };
        let filter_on = options.fast_paths
            && profile.tlb.micro_fifo
            && profile.l1d.replacement == Replacement::Random;
        let cores: Vec<Core> = (0..cores.max(1))
            .map(|_| Core {
                l1d: Cache::new(&profile.l1d),
                l1i: Cache::new(&profile.l1i),
                micro_data: micro(profile.tlb.micro_data_entries),
                micro_instruction: micro(profile.tlb.micro_instruction_entries),
                main_tlb: SetTlb::new(profile.tlb.main_entries, profile.tlb.main_ways),
                walk_cache: (profile.tlb.walk_cache_entries > 0).then(|| {
                    SetTlb::new(profile.tlb.walk_cache_entries, profile.tlb.walk_cache_ways)
                }),
                registers: Registers::new(),
                presence: BusPresence::default(),
                stats: CoreStats::default(),
                last_data: None,
                last_fetch: None,
                filter_epoch: 1,
                filtered: 0,
                filter: vec![FilterEntry::default(); if filter_on { FILTER_ENTRIES } else { 0 }]
                    .into_boxed_slice(),
                prefetcher: profile
                    .prefetch
                    .map(|p| Prefetcher::new(p, profile.l1d.line_bytes)),
                write_stream: WriteStream::new(),
                pages: PageCache::new(),
            })
            .collect();
        let device_span = (
            profile.devices.first().map_or(u64::MAX, |d| d.base),
            profile.devices.last().map_or(0, |d| d.base + d.size),
        );
        Self {
            line_shift: profile.l1d.line_bytes.trailing_zeros(),
            l2: profile.l2.as_ref().map(Cache::new),
            bus: Weave::new(cores.len(), profile.bus_service_ns, options.max_skew_ns),
            read_kind: Transfer::Demand,
            cores,
            fast_paths: options.fast_paths,
            verify_translations: options.verify_translations,
            filter_on,
            device_span,
            write_streaming: profile.write_streaming,
            whole_line: byte_mask(0, profile.l1d.line_bytes),
            profile,
        }
    }

    /// The profile the model runs.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Number of cores.
    pub fn cores(&self) -> usize {
        self.cores.len()
    }

    /// A core's counters.
    pub fn core_stats(&self, core: usize) -> &CoreStats {
        &self.cores[core].stats
    }

    /// Data accesses of `core` the filter answered (see `Self::filtered`).
    pub fn filtered_accesses(&self, core: usize) -> u64 {
        self.cores[core].filtered
    }

    /// The bus's counters.
    pub fn bus_stats(&self) -> BusStats {
        self.bus.stats()
    }

    /// Starts `core`'s window of bus counters at `from_ns` of its time
    /// (see [`WindowCounters`]).
    pub fn start_window(&mut self, core: usize, from_ns: u64) {
        self.bus.start_window(core, from_ns);
    }

    /// `core`'s bus counters since its window started.
    pub fn window_counters(&self, core: usize) -> WindowCounters {
        self.bus.window(core)
    }

    /// A core's translation registers as the model has followed them.
    pub fn registers(&self, core: usize) -> &Registers {
        &self.cores[core].registers
    }

    /// The stall of a data access made by `core` at `now` (its clock), the
    /// walk's descriptors derived rather than read.
    pub fn data_access(&mut self, core: usize, now: u64, access: &DataAccess) -> u64 {
        self.data_access_with(core, now, access, &mut NoTables)
    }

    /// As [`Self::data_access`], reading the walk's descriptors with `tables`.
    pub fn data_access_with<R: TableReader>(
        &mut self,
        core: usize,
        now: u64,
        access: &DataAccess,
        tables: &mut R,
    ) -> u64 {
        let store = access.kind == AccessKind::Store;
        match self.filtered(
            core,
            now,
            access.virtual_address,
            access.el,
            store,
            access.size,
        ) {
            Some(stall) => stall,
            None => self.unfiltered_data_access(core, now, access, tables),
        }
    }

    /// The stall of a data access made by `core` at `now` (its clock),
    /// known by its virtual address: the shell's one entry point for data.
    ///
    /// The filter answers a line the core used that is still a plain hit
    /// (by virtual address). Otherwise the core's page cache
    /// ([`crate::pages`]) gives the physical address, and only when it
    /// does not know the page is `resolve` called, with the virtual
    /// address, for the physical address and whether it is I/O (`None`:
    /// the shell cannot say; the access is then priced at its virtual
    /// address as RAM). A RAM answer is kept. The whole path then prices
    /// it, reading the walk's descriptors with `tables`.
    ///
    /// With [`ModelOptions::verify_translations`], `resolve` is called
    /// past the filter even when the page cache knows the page, and a
    /// different answer is an error (nothing priced).
    #[inline]
    pub fn access<F, R>(
        &mut self,
        core: usize,
        now: u64,
        access: &VirtualAccess,
        resolve: F,
        tables: &mut R,
    ) -> Result<u64, TranslationMismatch>
    where
        F: FnOnce(u64) -> Option<Resolution>,
        R: TableReader,
    {
        let store = access.kind == AccessKind::Store;
        let vaddr = access.virtual_address;
        // A line the core used, still a plain hit: answered by virtual address.
        if let Some(stall) = self.filtered(core, now, vaddr, access.el, store, access.size) {
            return Ok(stall);
        }
        let pages = &mut self.cores[core].pages;
        let cached = pages.get(vaddr, access.context, store);
        let resolution = match cached {
            Some(physical_address) if !self.verify_translations => Resolution {
                physical_address,
                io: false,
            },
            cached => {
                let asked = resolve(vaddr);
                let resolved = asked.unwrap_or(Resolution {
                    physical_address: vaddr,
                    io: false,
                });
                if let Some(cached) = cached
                    && (resolved.physical_address, resolved.io) != (cached, false)
                {
                    return Err(TranslationMismatch {
                        virtual_address: vaddr,
                        cached,
                        resolved,
                    });
                }
                if let Some(Resolution {
                    physical_address,
                    io: false,
                }) = asked
                {
                    pages.put(vaddr, access.context, store, physical_address);
                }
                resolved
            }
        };
        Ok(self.unfiltered_data_access(
            core,
            now,
            &DataAccess {
                virtual_address: vaddr,
                physical_address: resolution.physical_address,
                size: access.size,
                kind: access.kind,
                el: access.el,
                io: resolution.io,
            },
            tables,
        ))
    }

    /// The data access's whole path (the repeat of the last access, or
    /// translation, the line and beyond), remembering its line in the
    /// filter.
    fn unfiltered_data_access<R: TableReader>(
        &mut self,
        core: usize,
        now: u64,
        access: &DataAccess,
        tables: &mut R,
    ) -> u64 {
        let store = access.kind == AccessKind::Store;
        {
            let stats = &mut self.cores[core].stats;
            if store {
                stats.stores += 1;
            } else {
                stats.loads += 1;
            }
        }
        let first = access.physical_address >> self.line_shift;
        let last = (access.physical_address + u64::from(access.size.max(1)) - 1) >> self.line_shift;
        let repeat = LastData {
            virtual_line: access.virtual_address >> self.line_shift,
            physical_line: first,
            el: access.el,
            modified: false,
        };
        if !self.filter_on
            && let Some(stall) = self.repeat_data(core, now, access, &repeat, store, first == last)
        {
            return stall;
        }
        // Repeatable only if translated (a fault walks again every time).
        let (mut stall, translated) = self.translate(
            core,
            now,
            access.virtual_address,
            access.el,
            Side::Data,
            tables,
        );
        let mut repeatable = None;
        if let Some(cost) = self.device_cost(access.physical_address, access.io) {
            self.cores[core].stats.device_accesses += 1;
            stall += cost;
        } else {
            let line_mask = (1u64 << self.line_shift) - 1;
            let offset = access.physical_address & line_mask;
            let size = u64::from(access.size.max(1));
            if self.write_streaming.is_some() {
                if store {
                    let in_first = size.min((line_mask + 1) - offset);
                    self.note_store(core, first, offset, in_first);
                } else {
                    self.note_load(core, first);
                }
            }
            let (first_stall, state, prefetched) =
                self.demand_line(core, now + stall, first, store);
            stall += first_stall;
            if last != first {
                if self.write_streaming.is_some() {
                    if store {
                        let in_last = offset + size - (line_mask + 1);
                        self.note_store(core, last, 0, in_last);
                    } else {
                        self.note_load(core, last);
                    }
                }
                stall += self.demand_line(core, now + stall, last, store).0;
            } else if translated
                && !prefetched
                && state != LineState::Invalid
                && !(self.cores[core].prefetcher.is_some() && self.bus.may_delay(core, first))
            {
                // (Invalid: a store streamed past the L1, which holds no
                // copy: its next access is no plain hit. A line whose
                // prefetch the weave has not priced yet may still arrive
                // later than its core was told: its next access may wait.)
                // The line is in the L1 now, in `state` (nothing after
                // the lookup or fill touched this core's L1D).
                repeatable = Some(LastData {
                    modified: state == LineState::Modified,
                    ..repeat
                });
            }
        }
        if self.filter_on && repeatable.is_some() {
            self.remember_line(core, access, first, now + stall);
        }
        self.cores[core].last_data = repeatable;
        self.finish_call(core, now, stall)
    }

    /// The stall of a data access answered from the filter, or `None` for
    /// the whole path (which needs the physical address).
    ///
    /// The filter holds lines a core used (`remember_line`), each with what
    /// made its use a plain hit. An access to such a line, within it, at
    /// the same exception level, is answered as the whole path would
    /// answer it, if all of that still holds: no translation changed since
    /// (the epoch), the micro TLB entry that translated it is still there
    /// (first in, first out: a hit changes nothing, an entry is only ever
    /// replaced or emptied), the L1D slot still holds the line from the
    /// same fill (pseudo-random replacement: a hit changes nothing), in
    /// Modified state for a store (a store to any other state changes it),
    /// no prefetch of it is on its way, and the prefetcher is idle and no
    /// stream covers it (the hit would send nothing, move nothing). The
    /// whole path would then change nothing but counters (the use counts
    /// of the prefetcher's streams keep their order; the micro TLB's hint
    /// of its last hit only saves a scan).
    #[inline]
    fn filtered(
        &mut self,
        core: usize,
        now: u64,
        virtual_address: u64,
        el: ExceptionLevel,
        store: bool,
        size: u32,
    ) -> Option<u64> {
        if !self.filter_on {
            return None;
        }
        let line = virtual_address >> self.line_shift;
        if (virtual_address + u64::from(size.max(1)) - 1) >> self.line_shift != line {
            return None;
        }
        let c = &mut self.cores[core];
        let entry = c.filter[line as usize % FILTER_ENTRIES];
        if entry.key != filter_key(line, el)
            || entry.epoch != c.filter_epoch
            || now < entry.ready_at
            || (entry.micro != NO_MICRO
                && !c.micro_data.holds(entry.micro as usize, entry.micro_stamp))
        {
            return None;
        }
        let state = c.l1d.holds(
            entry.l1d_slot as usize,
            entry.physical_line,
            entry.l1d_stamp,
        )?;
        if store && state != LineState::Modified {
            return None;
        }
        if let Some(prefetcher) = &c.prefetcher
            && !prefetcher.hit_changes_nothing(entry.physical_line)
        {
            return None;
        }
        if store {
            c.stats.stores += 1;
            if self.write_streaming.is_some() {
                let offset = virtual_address & ((1 << self.line_shift) - 1);
                note_store_in(
                    &mut c.write_stream,
                    self.whole_line,
                    entry.physical_line,
                    offset,
                    u64::from(size.max(1)),
                );
            }
        } else {
            c.stats.loads += 1;
        }
        c.stats.l1d_hits += 1;
        c.filtered += 1;
        let stall = self.profile.l1d.hit_ns;
        Some(self.finish_call(core, now, stall))
    }

    /// Keeps `access`'s line (`physical_line`, one line, translated, not a
    /// device, now in the L1D) in `core`'s filter, ready from `ready_at`.
    fn remember_line(
        &mut self,
        core: usize,
        access: &DataAccess,
        physical_line: u64,
        ready_at: u64,
    ) {
        let c = &mut self.cores[core];
        let Some(slot) = c.l1d.probe(physical_line) else {
            return;
        };
        let micro = if c.registers.regime(access.el).is_some() {
            Some(c.micro_data.last_hit_index())
        } else {
            None
        };
        // Indices past 32 bits (never, with any profile that parses) are
        // simply not remembered: the whole path answers those lines.
        let (Ok(l1d_slot), Ok(micro_index)) = (
            u32::try_from(slot),
            micro.map_or(Ok(NO_MICRO), u32::try_from),
        ) else {
            return;
        };
        if micro_index == NO_MICRO && micro.is_some() {
            return;
        }
        let line = access.virtual_address >> self.line_shift;
        c.filter[line as usize % FILTER_ENTRIES] = FilterEntry {
            key: filter_key(line, access.el),
            physical_line,
            l1d_slot,
            l1d_stamp: c.l1d.stamp(slot),
            micro: micro_index,
            micro_stamp: micro.map_or(0, |index| c.micro_data.stamp(index)),
            epoch: c.filter_epoch,
            ready_at,
        };
    }

    /// A core's repeat of its last data access (`access` the same line,
    /// virtual and physical, at the same level, within one line), answered
    /// without the lookups, or `None` to take the whole path.
    ///
    /// The whole path would find the page in the micro TLB's last-hit entry
    /// and the line in the L1, both already the most recently used (nothing
    /// touched either since: every other use of them forgets the repeat),
    /// so it would change nothing but use stamps, which keep their order,
    /// and counters: a load in any state, a store to a Modified line (to
    /// any other it changes the line's state, and may snoop).
    fn repeat_data(
        &mut self,
        core: usize,
        now: u64,
        data: &DataAccess,
        access: &LastData,
        store: bool,
        one_line: bool,
    ) -> Option<u64> {
        if !self.fast_paths || !one_line {
            return None;
        }
        let c = &mut self.cores[core];
        let last = c.last_data?;
        if last.virtual_line != access.virtual_line
            || last.physical_line != access.physical_line
            || last.el != access.el
            || (store && !last.modified)
        {
            return None;
        }
        c.stats.l1d_hits += 1;
        if store && self.write_streaming.is_some() {
            note_store_in(
                &mut c.write_stream,
                self.whole_line,
                access.physical_line,
                data.physical_address & ((1 << self.line_shift) - 1),
                u64::from(data.size.max(1)),
            );
        }
        let stall = self.profile.l1d.hit_ns;
        // The whole path would also let the prefetcher send what it has
        // ready by now; a fill changes the L1, so no repeat after it.
        if c.prefetcher.as_ref().is_some_and(|p| p.may_fetch(now)) && self.prefetch_ahead(core, now)
        {
            self.cores[core].last_data = None;
        }
        Some(self.finish_call(core, now, stall))
    }

    /// The stall of fetching a block's instructions on `core` at `now`.
    pub fn instruction_fetch(&mut self, core: usize, now: u64, fetch: &BlockFetch) -> u64 {
        self.instruction_fetch_with(core, now, fetch, &mut NoTables)
    }

    /// As [`Self::instruction_fetch`], reading the walk's descriptors with `tables`.
    pub fn instruction_fetch_with<R: TableReader>(
        &mut self,
        core: usize,
        now: u64,
        fetch: &BlockFetch,
        tables: &mut R,
    ) -> u64 {
        let c = &mut self.cores[core];
        // Entering or leaving EL3 forgets the core's page cache.
        c.pages.block_at(fetch.el);
        c.stats.blocks += 1;
        let bytes = u64::from(fetch.bytes.max(1));
        let first = fetch.physical_address >> self.line_shift;
        let last = (fetch.physical_address + bytes - 1) >> self.line_shift;
        if self.fast_paths && self.cores[core].last_fetch.as_ref() == Some(fetch) {
            // The same block again, nothing fetched in between: its pages
            // are the I micro TLB's most recent, its lines the L1I's most
            // recent in their sets; the whole path changes nothing but
            // stamps (their order kept) and counters.
            let c = &mut self.cores[core];
            c.stats.l1i_hits += last - first + 1;
            let stall = (last - first + 1) * self.profile.l1i.hit_ns;
            return self.finish_call(core, now, stall);
        }
        let first_va = fetch.virtual_address;
        let last_va = first_va + bytes - 1;
        let (mut stall, first_translated) =
            self.translate(core, now, first_va, fetch.el, Side::Instruction, tables);
        // A block may run onto the next page (4 KiB, the smallest granule).
        let crosses = last_va >> 12 != first_va >> 12;
        if crosses {
            let (cost, _) = self.translate(
                core,
                now + stall,
                last_va,
                fetch.el,
                Side::Instruction,
                tables,
            );
            stall += cost;
        }
        for line in first..=last {
            stall += self.instruction_line(core, now + stall, line);
        }
        let c = &mut self.cores[core];
        // Repeatable only if translated (a fault walks again every time):
        // both ends' pages in the micro TLB. On one page, the entry that
        // translated the first address maps the last (entries map 4 KiB
        // or more); across two, the second's insertion could have pushed
        // the first's out.
        let translated = if crosses {
            match c.registers.regime(fetch.el) {
                None => true,
                Some(regime) => {
                    c.micro_instruction.contains(first_va, regime.space)
                        && c.micro_instruction.last_hit_maps(last_va, regime.space)
                }
            }
        } else {
            first_translated
        };
        c.last_fetch = translated.then_some(*fetch);
        self.finish_call(core, now, stall)
    }

    /// Applies a rare instruction executed by `core` and returns its stall.
    pub fn system_event(&mut self, core: usize, event: &SystemEvent) -> u64 {
        let stall = match *event {
            SystemEvent::RegisterWrite { register, value } => {
                let c = &mut self.cores[core];
                c.registers.write(register, value);
                // The regimes may have changed: a repeat would translate anew.
                c.forget_repeats();
                c.pages.register_written(register, value);
                let context_write = matches!(
                    register,
                    TranslationRegister::Ttbr0El1
                        | TranslationRegister::Ttbr1El1
                        | TranslationRegister::TcrEl1
                        | TranslationRegister::ContextidrEl1
                );
                if context_write && self.profile.tlb.flush_micro_on_context_write {
                    c.clear_micro_tlbs();
                }
                0
            }
            SystemEvent::WorldSwitch { secure } => {
                let c = &mut self.cores[core];
                c.registers.set_world(secure);
                c.forget_repeats();
                c.pages.forget_all();
                0
            }
            SystemEvent::Tlbi { tlbi, operand } => {
                // Any TLBI may follow a change of the guest's tables that
                // another core's pages reflect: every page cache forgets.
                for c in &mut self.cores {
                    c.pages.forget_all();
                }
                if let Some(what) = self.invalidation(core, tlbi.operation, operand) {
                    let targets = if tlbi.broadcast {
                        0..self.cores.len()
                    } else {
                        core..core + 1
                    };
                    for target in &mut self.cores[targets] {
                        target.main_tlb.invalidate(&what);
                        if let Some(walk_cache) = &mut target.walk_cache {
                            walk_cache.invalidate(&what);
                        }
                        // TRM: every main TLB maintenance empties both micro TLBs.
                        target.clear_micro_tlbs();
                        target.stats.tlbi_received += 1;
                    }
                }
                if tlbi.broadcast {
                    self.profile.tlb.tlbi_broadcast_ns
                } else {
                    self.profile.tlb.tlbi_local_ns
                }
            }
        };
        self.cores[core].stats.stall_ns += stall;
        stall
    }

    /// What a TLBI issued on `core` removes (`None`: nothing modelled).
    fn invalidation(
        &self,
        core: usize,
        operation: TlbiOperation,
        operand: u64,
    ) -> Option<Invalidation> {
        use TlbiOperation as T;
        let registers = &self.cores[core].registers;
        let current = registers.el10_space().id;
        let asid = registers.asid_of(operand);
        // Operand bits 43:0 are VA[55:12]; bit 55 extends to the top.
        let va = {
            let va = (operand & ((1 << 44) - 1)) << 12;
            if va >> 55 & 1 == 1 {
                va | 0xff00_0000_0000_0000
            } else {
                va
            }
        };
        let el10_any_vmid = current & SpaceId::REGIME_AND_SECURITY;
        let exact = |space_value, asid, va| Invalidation {
            space_mask: SpaceId::ALL,
            space_value,
            asid,
            va,
        };
        let regime = |regime, secure, va| Invalidation {
            space_mask: SpaceId::REGIME_AND_SECURITY,
            space_value: SpaceId::compose(regime, secure, 0),
            asid: AsidScope::Any,
            va,
        };
        Some(match operation {
            T::VmallE1 | T::VmallS12E1 => exact(current, AsidScope::Any, None),
            T::VaE1 => exact(current, AsidScope::ThisOrGlobal(asid), Some(va)),
            T::AsidE1 => exact(current, AsidScope::NonGlobal(asid), None),
            T::VaaE1 => exact(current, AsidScope::Any, Some(va)),
            T::AllE1 => Invalidation {
                space_mask: SpaceId::REGIME_AND_SECURITY,
                space_value: el10_any_vmid,
                asid: AsidScope::Any,
                va: None,
            },
            T::Ipas2E1 => return None,
            T::AllE2 => regime(SpaceId::EL2, false, None),
            T::VaE2 => regime(SpaceId::EL2, false, Some(va)),
            T::AllE3 => regime(SpaceId::EL3, true, None),
            T::VaE3 => regime(SpaceId::EL3, true, Some(va)),
        })
    }

    fn device_cost(&self, physical_address: u64, io: bool) -> Option<u64> {
        let (first, end) = self.device_span;
        if (first..end).contains(&physical_address) {
            let devices = &self.profile.devices;
            let after = devices.partition_point(|d| d.base <= physical_address);
            if let Some(device) = after.checked_sub(1).map(|i| &devices[i])
                && physical_address - device.base < device.size
            {
                return Some(device.access_ns);
            }
        }
        io.then_some(self.profile.mmio_default_ns)
    }

    /// The stall of translating `va` on `core` (0 on a micro TLB hit or
    /// with the regime's MMU off), and whether the micro TLB now maps `va`
    /// (as its last hit) or the MMU is off: `false` when the access faults.
    #[inline]
    fn translate<R: TableReader>(
        &mut self,
        core: usize,
        now: u64,
        va: u64,
        el: ExceptionLevel,
        side: Side,
        tables: &mut R,
    ) -> (u64, bool) {
        let c = &mut self.cores[core];
        let Some(space) = c.registers.regime(el).map(|regime| regime.space) else {
            return (0, true);
        };
        let micro = match side {
            Side::Data => &mut c.micro_data,
            Side::Instruction => &mut c.micro_instruction,
        };
        if micro.lookup(va, space) {
            return (0, true);
        }
        self.translate_miss(core, now, va, el, side, space, tables)
    }

    /// [`Self::translate`] past a micro TLB miss.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn translate_miss<R: TableReader>(
        &mut self,
        core: usize,
        now: u64,
        va: u64,
        el: ExceptionLevel,
        side: Side,
        space: Space,
        tables: &mut R,
    ) -> (u64, bool) {
        let c = &mut self.cores[core];
        let regime = *c.registers.regime(el).expect("translate found the regime");
        if side == Side::Instruction {
            // Its walk may read descriptors through the L1D: a data
            // access's line is then no longer the most recent of its set.
            c.last_data = None;
        }
        c.stats.micro_tlb_misses += 1;
        let mut stall = self.profile.tlb.main_hit_ns;
        let mapping = match c.main_tlb.lookup(va, space) {
            Some(mapping) => Some(mapping),
            None => {
                c.stats.main_tlb_misses += 1;
                match regime.half_for(va).copied() {
                    // Outside both halves: the access faults, nothing to cache.
                    None => None,
                    Some(half) => {
                        let (cost, leaf) = self.walk(core, now + stall, va, &half, space, tables);
                        stall += cost;
                        if let Some(leaf) = leaf {
                            self.cores[core].main_tlb.insert(va, space, leaf);
                        }
                        leaf
                    }
                }
            }
        };
        let c = &mut self.cores[core];
        if let Some(mapping) = mapping {
            match side {
                Side::Data => c.micro_data.insert(va, space, mapping),
                Side::Instruction => c.micro_instruction.insert(va, space, mapping),
            }
        }
        c.stats.translation_stall_ns += stall;
        (stall, mapping.is_some())
    }

    /// Walks `half`'s tables for `va`: the stall of its descriptor reads
    /// and the translation found (`None`: the walk faults). Counts the
    /// walk as read from the guest's tables or as (partly) derived.
    fn walk<R: TableReader>(
        &mut self,
        core: usize,
        now: u64,
        va: u64,
        half: &Half,
        space: Space,
        tables: &mut R,
    ) -> (u64, Option<Mapping>) {
        let (stall, mapping, derived) = self.walk_levels(core, now, va, half, space, tables);
        let stats = &mut self.cores[core].stats;
        if derived {
            stats.walks_unreadable += 1;
        } else {
            stats.walks_read += 1;
        }
        (stall, mapping)
    }

    /// [`Self::walk`]'s levels, and whether a descriptor could not be read.
    fn walk_levels<R: TableReader>(
        &mut self,
        core: usize,
        now: u64,
        va: u64,
        half: &Half,
        space: Space,
        tables: &mut R,
    ) -> (u64, Option<Mapping>, bool) {
        let tlb = self.profile.tlb;
        let start = half.start_level();
        let charged_from = if tlb.walk_levels_charged == 0 {
            start
        } else {
            start.max(4 - tlb.walk_levels_charged as u8)
        };
        let page = Mapping {
            shift: half.granule_shift,
            global: half.global_by_default,
            payload: 0,
        };
        // The walk cache holds the last-level table of the span one
        // level-2 entry maps (2 MiB with 4 KiB pages), and whether it lies
        // in the non-secure space (`NON_SECURE_TABLE`).
        let walk_cache_key = Mapping {
            shift: half.level_shift(2),
            global: half.global_by_default,
            payload: 0,
        };
        let mut level = start;
        let mut table = half.table_base;
        // The walk reads the space of its regime's security state, and
        // the non-secure one below a secure table descriptor with NSTable.
        let mut secure = space.id & SpaceId::SECURE != 0;
        if start < 3
            && let Some(walk_cache) = &mut self.cores[core].walk_cache
            && let Some(cached) = walk_cache.lookup(va, space)
        {
            table = cached.payload & !NON_SECURE_TABLE;
            secure &= cached.payload & NON_SECURE_TABLE == 0;
            level = 3;
            self.cores[core].stats.walk_cache_hits += 1;
        }
        let mut derived = false;
        let mut stall = 0;
        loop {
            let descriptor_address = table + half.index(va, level) * 8;
            if level >= charged_from {
                stall +=
                    tlb.walk_level_ns + self.descriptor_read(core, now + stall, descriptor_address);
                self.cores[core].stats.walk_reads += 1;
            }
            let descriptor = if derived {
                None
            } else {
                tables.read_descriptor(descriptor_address, secure)
            };
            match descriptor {
                None if level == 3 => return (stall, Some(page), true),
                None => {
                    // Unreadable: the rest of this walk is derived.
                    derived = true;
                    table = synthetic_table(half, half.table_base, level + 1, va);
                }
                Some(descriptor) => {
                    let valid = descriptor & 1 == 1;
                    let table_or_page = descriptor & 2 == 2;
                    let global = descriptor >> 11 & 1 == 0;
                    if !valid || (level == 3 && !table_or_page) || (level == 0 && !table_or_page) {
                        return (stall, None, derived);
                    }
                    if level == 3 || !table_or_page {
                        let shift = half.level_shift(level);
                        return (
                            stall,
                            Some(Mapping {
                                shift,
                                global,
                                payload: 0,
                            }),
                            derived,
                        );
                    }
                    // NSTable (bit 63) counts in the secure state only.
                    secure &= descriptor >> 63 == 0;
                    table = descriptor & 0x0000_ffff_ffff_f000 & !((1 << half.granule_shift) - 1);
                }
            }
            level += 1;
            if level == 3
                && let Some(walk_cache) = &mut self.cores[core].walk_cache
            {
                let non_secure = if secure { 0 } else { NON_SECURE_TABLE };
                walk_cache.insert(
                    va,
                    space,
                    Mapping {
                        payload: table | non_secure,
                        ..walk_cache_key
                    },
                );
            }
        }
    }

    /// The stall of one descriptor read of a walk.
    fn descriptor_read(&mut self, core: usize, now: u64, physical_address: u64) -> u64 {
        let line = physical_address >> self.line_shift;
        let kind = std::mem::replace(&mut self.read_kind, Transfer::Walk);
        let stall = match self.profile.tlb.walk_enters {
            WalkEntryLevel::L1Data => self.data_line(core, now, line, false),
            WalkEntryLevel::L2 => self.beyond_l1(core, now, line),
        };
        self.read_kind = kind;
        stall
    }

    /// The stall of a data access to one line by `core` at `now`.
    fn data_line(&mut self, core: usize, now: u64, line: u64, store: bool) -> u64 {
        self.data_line_state(core, now, line, store).0
    }

    /// [`Self::data_line`], and the line's state in the L1 after it.
    #[inline]
    fn data_line_state(
        &mut self,
        core: usize,
        now: u64,
        line: u64,
        store: bool,
    ) -> (u64, LineState) {
        let hit_ns = self.profile.l1d.hit_ns;
        let c = &mut self.cores[core];
        if let Some(slot) = c.l1d.lookup(line) {
            c.stats.l1d_hits += 1;
            let state = c.l1d.state(slot);
            if !store {
                return (hit_ns, state);
            }
            return match state {
                LineState::Shared | LineState::Owned => {
                    c.l1d.set_state(slot, LineState::Modified);
                    c.stats.coherence_upgrades += 1;
                    self.snoop(core, line, true);
                    (
                        hit_ns + self.profile.coherence_upgrade_ns,
                        LineState::Modified,
                    )
                }
                _ => {
                    c.l1d.set_state(slot, LineState::Modified);
                    (hit_ns, LineState::Modified)
                }
            };
        }
        self.data_line_miss(core, now, line, store)
    }

    /// [`Self::data_line_state`] past an L1 miss.
    #[inline(never)]
    fn data_line_miss(
        &mut self,
        core: usize,
        now: u64,
        line: u64,
        store: bool,
    ) -> (u64, LineState) {
        self.cores[core].stats.l1d_misses += 1;
        if store && let Some(rule) = self.write_streaming {
            let stream = &mut self.cores[core].write_stream;
            if stream.line == line
                && (stream.streamed || stream.run + 1 >= rule.l1_no_allocate_line)
            {
                if !stream.streamed {
                    stream.streamed = true;
                    let past_l2 = stream.run + 1 >= rule.l2_no_allocate_line;
                    self.stream_line(core, now, line, past_l2);
                }
                // The store leaves through the write buffer: no linefill
                // to wait for.
                return (self.profile.l1d.hit_ns, LineState::Invalid);
            }
        }
        self.fill_line(core, now, line, store)
    }

    /// Notes a store of `bytes` bytes from byte `first` of `line` by
    /// `core` (before its lookup), for write streaming.
    fn note_store(&mut self, core: usize, line: u64, first: u64, bytes: u64) {
        let whole_line = self.whole_line;
        note_store_in(
            &mut self.cores[core].write_stream,
            whole_line,
            line,
            first,
            bytes,
        );
    }

    /// A load of `line` by `core`: one of the line its stores are
    /// streaming past the L1 ends the mode (TRM: "a load to the same line
    /// as is currently being written").
    fn note_load(&mut self, core: usize, line: u64) {
        let stream = &mut self.cores[core].write_stream;
        if stream.streamed && stream.line == line {
            stream.streamed = false;
            stream.run = 0;
        }
    }

    /// Whether `core`'s stores are in write streaming mode (their misses
    /// do not allocate in the L1).
    fn write_streaming_on(&self, core: usize) -> bool {
        self.write_streaming.is_some_and(|rule| {
            let stream = &self.cores[core].write_stream;
            stream.streamed || stream.run + 1 >= rule.l1_no_allocate_line
        })
    }

    /// A line `core`'s stores write past its L1 without allocating: other
    /// cores' copies go; the line is written into the L2 (allocating there
    /// unless `past_l2`, the L2's own threshold reached, and the L2 misses)
    /// or to DRAM. Either leaves through the write buffer: no stall.
    fn stream_line(&mut self, core: usize, now: u64, line: u64, past_l2: bool) {
        self.snoop(core, line, true);
        self.cores[core].stats.streamed_lines += 1;
        let in_l2 = self.l2.as_ref().is_some_and(|l2| l2.probe(line).is_some());
        if self.l2.is_some() && (in_l2 || !past_l2) {
            self.write_back_from_l1(core, now, line);
        } else {
            self.cores[core].stats.streamed_to_memory += 1;
            self.memory_write(core, now);
        }
    }

    /// Brings `line` into `core`'s L1 data cache from wherever it is (for
    /// a demand miss or a prefetch): the stall until it arrives, and its
    /// state there.
    fn fill_line(&mut self, core: usize, now: u64, line: u64, store: bool) -> (u64, LineState) {
        let (held_elsewhere, dirty_elsewhere) = self.snoop(core, line, store);
        let stall = if dirty_elsewhere {
            // The owner's L1 supplies the line (and, for a store, hands its
            // dirty copy over: no write-back).
            self.cores[core].stats.coherence_transfers += 1;
            self.profile.coherence_transfer_ns
        } else if held_elsewhere && !self.l2_has(line) {
            self.cores[core].stats.coherence_transfers += 1;
            self.profile.coherence_transfer_ns
        } else {
            self.beyond_l1(core, now, line)
        };
        let state = if store {
            LineState::Modified
        } else if held_elsewhere {
            LineState::Shared
        } else {
            LineState::Exclusive
        };
        self.cores[core].stats.l1d_fills += 1;
        let (_, victim) = self.cores[core].l1d.insert(line, state);
        if let Some(victim) = victim
            && victim.dirty
        {
            self.write_back_from_l1(core, now, victim.line);
        }
        (stall, state)
    }

    /// A demand access's line: the L1 and beyond, then the prefetcher: a
    /// hit on a line still on its way waits for it, a miss trains the
    /// streams, and either may send prefetches. Returns the stall, the
    /// line's state, and whether prefetches changed the L1 after the
    /// access (then it cannot be repeated as a plain hit).
    fn demand_line(
        &mut self,
        core: usize,
        now: u64,
        line: u64,
        store: bool,
    ) -> (u64, LineState, bool) {
        let misses = self.cores[core].stats.l1d_misses;
        let (mut stall, state) = self.data_line_state(core, now, line, store);
        // In write streaming mode stores make no linefills for the
        // prefetcher to follow (and fetching ahead of them would fill the
        // lines the mode keeps out).
        let trains = !(store && self.write_streaming_on(core));
        let c = &mut self.cores[core];
        let missed = c.stats.l1d_misses != misses;
        let Some(prefetcher) = c.prefetcher.as_mut() else {
            return (stall, state, false);
        };
        if missed {
            if trains {
                prefetcher.on_miss(line);
            }
        } else {
            if prefetcher.has_in_flight(now) {
                let wait = prefetcher.arrival_wait(line, now);
                if wait > 0 {
                    c.stats.prefetch_late += 1;
                    c.stats.prefetch_late_wait_ns += wait;
                    stall += wait;
                }
            }
            if trains {
                prefetcher.on_hit(line);
            }
        }
        let changed = prefetcher.may_fetch(now) && self.prefetch_ahead(core, now);
        (stall, state, changed)
    }

    /// Sends the prefetches `core`'s prefetcher has ready at `now`;
    /// whether any filled a line.
    #[inline(never)]
    fn prefetch_ahead(&mut self, core: usize, now: u64) -> bool {
        let mut filled = false;
        while let Some(line) = self.cores[core]
            .prefetcher
            .as_mut()
            .and_then(|p| p.next_line(now))
        {
            let arrives = if self.cores[core].l1d.probe(line).is_some() {
                None
            } else {
                let kind = std::mem::replace(&mut self.read_kind, Transfer::Prefetch);
                let (stall, _) = self.fill_line(core, now, line, false);
                self.read_kind = kind;
                self.cores[core].stats.prefetches += 1;
                filled = true;
                Some(now + stall)
            };
            if let Some(prefetcher) = self.cores[core].prefetcher.as_mut() {
                prefetcher.issued(line, arrives);
            }
            self.delay_prefetches();
        }
        filled
    }

    fn l2_has(&self, line: u64) -> bool {
        self.l2.as_ref().is_some_and(|l2| l2.probe(line).is_some())
    }

    /// Looks for `line` in the other cores' L1 data caches, downgrading
    /// their copies (a load) or invalidating them (a store); returns
    /// whether any had it and whether one had it dirty.
    fn snoop(&mut self, core: usize, line: u64, store: bool) -> (bool, bool) {
        let (mut held, mut dirty) = (false, false);
        for (index, other) in self.cores.iter_mut().enumerate() {
            if index == core {
                continue;
            }
            if let Some(slot) = other.l1d.probe(line) {
                let state = other.l1d.state(slot);
                // Its copy changes state (or goes): its repeat would not hit alike.
                other.last_data = None;
                held = true;
                dirty |= state.is_dirty();
                let next = match (store, state) {
                    (true, _) => LineState::Invalid,
                    (false, LineState::Modified) => LineState::Owned,
                    (false, LineState::Exclusive) => LineState::Shared,
                    (false, kept) => kept,
                };
                other.l1d.set_state(slot, next);
            }
        }
        (held, dirty)
    }

    /// The stall of reading `line` past the L1s: from the L2, or from DRAM
    /// (filling the L2).
    fn beyond_l1(&mut self, core: usize, now: u64, line: u64) -> u64 {
        if let Some(l2) = &mut self.l2 {
            if l2.lookup(line).is_some() {
                self.cores[core].stats.l2_hits += 1;
                return self.profile.l2.map_or(0, |g| g.hit_ns);
            }
            self.cores[core].stats.l2_misses += 1;
        }
        let stall = self.memory_read(core, now, line);
        if let Some(l2) = &mut self.l2 {
            let (_, victim) = l2.insert(line, LineState::Shared);
            if victim.is_some_and(|v| v.dirty) {
                self.memory_write(core, now);
            }
        }
        stall
    }

    /// Ends a call of `core` at `now` whose access stalled it `stall`:
    /// adds what the core owes for waits priced since its last call (the
    /// weave prices a read once the cores behind catch up) and returns the
    /// call's whole stall.
    fn finish_call(&mut self, core: usize, now: u64, stall: u64) -> u64 {
        self.resume(core, now);
        let owed = self.bus.take_debt(core);
        let stall = stall + owed;
        let c = &mut self.cores[core];
        // Almost always nothing is owed: then the counters' second host
        // line is left alone.
        if owed != 0 {
            c.stats.bus_wait_ns += owed;
            c.stats.bus_deferred_wait_ns += owed;
        }
        c.stats.stall_ns += stall;
        if now < c.presence.last_call_end {
            c.stats.calls_out_of_order += 1;
        }
        c.presence.last_call_end = now + stall;
        self.bus.reached(core, now + stall);
        self.delay_prefetches();
        stall
    }

    /// Moves the arrival of every prefetch the weave priced with a wait.
    /// Inlined: every call ends here, and almost always there is none (as
    /// a call of its own it took 2 % of a boot's host time).
    #[inline]
    fn delay_prefetches(&mut self) {
        if self.bus.has_delayed_prefetches() {
            self.move_delayed_prefetches();
        }
    }

    /// [`Self::delay_prefetches`] when there are some.
    #[inline(never)]
    fn move_delayed_prefetches(&mut self) {
        for (core, line, wait) in self.bus.take_delayed_prefetches() {
            if let Some(prefetcher) = self.cores[core].prefetcher.as_mut() {
                prefetcher.delay(line, wait);
            }
        }
    }

    /// Forgives what `core` owed when it halted, up to the halt's length
    /// (`Weave::resume`), and counts it.
    #[inline]
    fn resume(&mut self, core: usize, now: u64) {
        let forgiven = self.bus.resume(core, now);
        if forgiven != 0 {
            self.cores[core].stats.bus_wait_absorbed_by_halts_ns += forgiven;
        }
    }

    /// A line read from DRAM: its wait for the bus plus the access.
    fn memory_read(&mut self, core: usize, now: u64, line: u64) -> u64 {
        self.resume(core, now);
        let kind = self.read_kind;
        let at_once = self.bus.request(core, now, kind, line);
        // A read the core waits for pays what the core owes: this read's
        // wait if it was priced at once, and every earlier wait priced since.
        let (wait, booked) = if matches!(kind, Transfer::Demand | Transfer::Walk) {
            (self.bus.take_debt_at(core, now), at_once)
        } else {
            (0, 0)
        };
        let stats = &mut self.cores[core].stats;
        stats.memory_reads += 1;
        stats.bus_wait_ns += wait;
        stats.bus_booked_wait_ns += booked;
        stats.bus_deferred_wait_ns += wait - booked;
        wait + self.profile.memory_latency_ns
    }

    /// A dirty line written to DRAM: it occupies the bus, but the core does
    /// not wait for it (the write-back leaves through the eviction buffer).
    fn memory_write(&mut self, core: usize, now: u64) {
        self.bus.request(core, now, Transfer::WriteBack, 0);
        self.cores[core].stats.memory_writebacks += 1;
    }

    /// A dirty line leaving `core`'s L1: into the L2 if there is one, else
    /// to DRAM.
    fn write_back_from_l1(&mut self, core: usize, now: u64, line: u64) {
        let Some(l2) = &mut self.l2 else {
            self.memory_write(core, now);
            return;
        };
        let evicted_dirty = match l2.lookup(line) {
            Some(slot) => {
                l2.set_state(slot, LineState::Modified);
                false
            }
            None => l2
                .insert(line, LineState::Modified)
                .1
                .is_some_and(|v| v.dirty),
        };
        if evicted_dirty {
            self.memory_write(core, now);
        }
    }

    /// The stall of fetching one instruction line on `core`.
    fn instruction_line(&mut self, core: usize, now: u64, line: u64) -> u64 {
        let c = &mut self.cores[core];
        if c.l1i.lookup(line).is_some() {
            c.stats.l1i_hits += 1;
            return self.profile.l1i.hit_ns;
        }
        c.stats.l1i_misses += 1;
        let stall = self.beyond_l1(core, now, line);
        // Instruction lines are clean: a victim needs no write-back.
        self.cores[core].l1i.insert(line, LineState::Shared);
        stall
    }
}
