//! Tandem's memory model: the stall each guest memory access, block fetch and TLB-changing instruction costs its core in per-core timing.
//!
//! Per-core timing charges every instruction 1 ns whatever it touches. This
//! crate prices what it touches: a plugin shell in QEMU calls it for every
//! data access, every executed translation block and every rare
//! instruction that changes translation, and adds the returned stall to
//! that vCPU's clock. The crate is pure Rust, runs on the host and is
//! tested there; it knows nothing of QEMU.
//!
//! # What it models
//!
//! - **Caches**: per core an L1 data and an L1 instruction cache, and one
//!   L2 shared by all cores (optional: `arm11-003` has none); set
//!   associative, LRU or pseudo-random replacement as the profile says (a
//!   fixed generator per cache), one line size, physically indexed. The L1 data
//!   caches are write-back, write-allocate and kept coherent with MOESI: a
//!   load miss is served by another core's L1 when that core holds the line
//!   dirty (or clean and the L2 does not have it), a store invalidates the
//!   other copies. **Write streaming** (profiles with the rule, `a53`):
//!   after a run of stores that write whole lines (the TRM's thresholds:
//!   from the 4th line in a row), a store that misses writes its line past
//!   the L1 into the L2 without allocating (from the 128th, past the L2 to
//!   DRAM when the L2 misses too), without a stall and without training
//!   the prefetcher; a line left partly written, or a load of the line
//!   being written, ends the run. The L2 is filled on every miss and takes L1 write-backs;
//!   it is neither inclusive nor exclusive (no back-invalidation). The L1
//!   instruction cache is probed once per executed block for each line the
//!   block spans, not per instruction.
//! - **Bus and DRAM**: one server shared by all cores ([`weave`]). Every
//!   line it carries (a demand fill, a prefetch, a write-back, a walk's
//!   descriptor line) takes one slot of its timeline, the profile's
//!   service time; a read stalls its core for its wait to its slot plus
//!   the profile's DRAM latency. Each core's requests queue in a lane of
//!   their own, in that core's time order whatever order the cores' calls
//!   arrive in (their clocks are up to a quantum apart), and each slot goes
//!   to the core whose oldest request, arrived by its start, has waited at
//!   the head of the bus's queue longest (since it arrived, or since that
//!   core's slot before ended): a chasing core waits for the slot under
//!   way and one slot of each core queued before it, never for a streaming
//!   core's whole backlog, and the
//!   slots of all cores together never carry more than the bus does. A
//!   slot is granted once every running core has passed its start (or has
//!   a request of its own waiting), so the grants are those of a quantum
//!   of 0; a read's wait is owed to its core and charged with its next
//!   access (the part known when it is presented, at once).
//!   `tests/bus_fidelity.rs` and `tests/contention.rs` compare skewed runs
//!   with the same runs in time order.
//! - **Prefetching** (profiles that have one, `a53`): per core, an L1 data
//!   prefetcher that watches linefills for streams of lines a fixed stride
//!   apart and fetches ahead with a bounded number of lines in flight
//!   ([`prefetch`]); a demand access that finds its line still on the way
//!   waits for the rest. A streaming core thus keeps several reads at the
//!   bus, as an A53 does.
//! - **Devices**: an access to a profile's device range costs that
//!   device's fixed stall, with no cache and no bus; an access QEMU calls
//!   I/O outside every range costs the profile's default.
//! - **TLBs**: per core a data and an instruction micro TLB (fully
//!   associative) and a main TLB (set associative), tagged by regime,
//!   security state, VMID and ASID (global entries match every ASID), and
//!   an optional walk cache of last-level table addresses. A main TLB miss
//!   walks the guest's stage 1 tables: each descriptor read is a memory
//!   access through the caches (from the L1 data cache or the L2, per
//!   profile), at the address the table base and VA give. A
//!   [`TableReader`] reads the guest's descriptors (the plugin reads guest
//!   RAM through QEMU), so walks follow the guest's tables (block sizes,
//!   the nG bit, faults) and their lines share cache sets with the guest's
//!   data; each read names its space: secure for the secure EL1&0 regime
//!   and EL3, non-secure for the normal world and EL2 and below a secure
//!   table descriptor with NSTable. A descriptor it cannot read (or no
//!   reader, [`NoTables`]) makes the rest of that walk derive its tables'
//!   addresses from the root and the VA ([`translation::synthetic_table`],
//!   above any real address), with 4 KiB pages, TTBR1's half global and
//!   TTBR0's per ASID: such walks are counted
//!   ([`CoreStats::walks_unreadable`], against `walks_read`).
//! - **Translation state**: the model follows each core's TTBR0/1_EL1,
//!   TCR_EL1, SCTLR_ELx, SCR_EL3, HCR_EL2 and VTTBR_EL2 from the writes
//!   the plugin decodes ([`decode`]); a regime whose SCTLR.M is clear is
//!   untranslated (no TLB cost). TLBI by all, ASID, VA, and VA-all-ASIDs,
//!   local or inner shareable (the IS forms reach every core's TLBs), for
//!   EL1&0, EL2 and EL3.
//!
//! All costs come from a [`Profile`], a TOML file whose every value says
//! where it comes from (`profiles/a53.toml`, `profiles/arm11-003.toml`).
//!
//! # What it does not model
//!
//! - **Write buffers**: a store that misses stalls like a load (the line is
//!   fetched before the store completes) unless write streaming keeps it
//!   out of the L1; a write-back stalls its core only while its eviction
//!   buffer (one line, assumed) still holds the previous one.
//! - **Hit-under-miss and memory-level parallelism** beyond the
//!   prefetcher's: a demand miss stalls its core for all of it (an
//!   in-order A53 stalls at the load's first use, soon after).
//! - **Instruction prefetching**, and prefetching across a 4 KiB page.
//! - **Coherence traffic on the bus**: snoops and cache-to-cache transfers
//!   cost the requesting core a fixed stall and occupy nothing shared.
//!   Instruction caches are not kept coherent with data (as on Arm).
//! - **Pipelines**: an L1 hit adds the profile's stall (0 in the shipped
//!   profiles): the 1 ns per instruction stands for an average CPI of 1,
//!   so a pointer chase through L1 runs faster here than on hardware.
//! - **Stage 2**: EL1&0 entries carry the VMID, but no stage 2 walk or IPA
//!   cache is charged, and stage 1 descriptors are read at their IPA as a
//!   physical address (Tandem's partitioning layer maps IPA = PA).
//! - **Security in the caches**: a line is tagged by its physical address
//!   only, not by its space (the A53 tags the NS bit); walks read the
//!   right space, but a secure and a non-secure line of the same address
//!   would share a cache line.
//! - **Memory attributes**: every non-device access is cacheable (the
//!   model does not see page attributes); cache maintenance instructions
//!   (DC, IC) are not decoded; the contiguous bit is ignored.
//! - **DRAM banks, rows and refresh**: one latency and one service time.
//!
//! # Bounds
//!
//! - Stalls are returned per access, but QEMU can charge them only as the
//!   block runs: a timer or interrupt due inside a block can be late by at
//!   most that block's stalls, and cores can drift apart by the quantum plus
//!   one block's stalls.
//! - Each core's lane remembers its last [`bus::PERIODS`] busy periods for
//!   its window counters; a question about an older time is counted
//!   ([`BusStats::beyond_history`]).
//! - A read's wait reaches its core up to a quantum late (with a later
//!   access), when every running core has passed its slot; until then the
//!   core runs on, so a core that saturates the bus pays its waits in
//!   lumps of up to a few µs. A core more than the skew bound behind the
//!   one furthest ahead is taken as halted.
//! - The answer depends only on the sequence of calls: the same guest run
//!   gives the same stalls (no hashing of addresses by the host, no time,
//!   no randomness: pseudo-random replacement is a fixed generator per
//!   cache, the same choices every run).
//!
//! # Driving it from a plugin
//!
//! Build a [`MemoryModel`] from a [`Profile`] ([`Profile::builtin`] or
//! [`Profile::load`]) and the number of vCPUs. Then, on the vCPU's thread
//! (QEMU's round-robin thread runs every vCPU: one model, no locking
//! inside):
//!
//! - each memory access: [`MemoryModel::access`] with a [`VirtualAccess`]
//!   and a closure that resolves its physical address, which the model
//!   calls only when neither its filter (a line the core used that is
//!   still a plain hit) nor the core's page cache ([`pages`]) knows it
//!   ([`MemoryModel::data_access`] takes a [`DataAccess`] whose physical
//!   address the caller knows, as the tests do);
//! - each executed block: [`MemoryModel::instruction_fetch`] with a [`BlockFetch`];
//! - each instruction [`decode::classify`] recognised at translation:
//!   [`MemoryModel::system_event`] with the event its `Xt` makes, or, for
//!   a guest's window marker (`HINT #112` / `#113` on its core, `#114` /
//!   `#115` on every core),
//!   [`MemoryModel::start_window`] and [`MemoryModel::window_counters`];
//!
//! each returns the ns to charge to that vCPU. The model keeps every cache
//! of translations (the filter, the page caches, the TLBs) and forgets
//! what a block's exception level or a rare instruction may have changed:
//! the shell keeps none. [`Profile::hash`] goes into
//! the run's provenance; [`MemoryModel::core_stats`] and
//! [`MemoryModel::bus_stats`] into its report.

pub mod bus;
pub mod cache;
pub mod decode;
pub mod model;
pub mod pages;
pub mod prefetch;
pub mod profile;
pub mod tlb;
pub mod translation;
pub mod weave;

pub use bus::{BusStats, Transfer, WindowCounters};
pub use decode::{
    RareInstruction, Tlbi, TlbiOperation, WINDOW_OPEN_ALL_HINT, WINDOW_OPEN_HINT, classify,
};
pub use model::{
    AccessKind, BlockFetch, CoreStats, DataAccess, MemoryModel, ModelOptions, SystemEvent,
    TranslationMismatch, VirtualAccess,
};
pub use pages::{Resolution, TranslationContext};
pub use profile::{PrefetchProfile, Profile, ProfileError, Replacement};
pub use translation::{ExceptionLevel, NoTables, TableReader, TranslationRegister};
