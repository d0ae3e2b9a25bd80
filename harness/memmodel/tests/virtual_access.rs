//! The shell's one entry point for data (`MemoryModel::access`, by virtual address): priced exactly as `data_access` with the physical address, the physical address asked for only when the filter and the page cache cannot give it, forgotten on the events that may change it, and checked when asked to.

mod common;

use std::cell::Cell;

use common::{Sequence, enable_mmu, ttbr, write};
use tandem_memmodel::{
    AccessKind, BlockFetch, DataAccess, ExceptionLevel, MemoryModel, ModelOptions, NoTables,
    Profile, Resolution, SystemEvent, Tlbi, TlbiOperation, TranslationContext, TranslationMismatch,
    TranslationRegister, VirtualAccess,
};

/// QEMU's MMU index 2 (E10_1): the kernel's accesses.
const KERNEL: TranslationContext = TranslationContext { id: 2, el10: true };

fn model_with(name: &str, cores: usize, verify_translations: bool) -> MemoryModel {
    MemoryModel::new(
        Profile::builtin(name).unwrap(),
        cores,
        ModelOptions {
            verify_translations,
            ..ModelOptions::default()
        },
    )
}

fn load(va: u64) -> VirtualAccess {
    VirtualAccess {
        virtual_address: va,
        size: 8,
        kind: AccessKind::Load,
        el: ExceptionLevel::El1,
        context: KERNEL,
    }
}

/// A fixed translation: every page of RAM at 0x4000_0000 higher.
fn ram(va: u64) -> Option<Resolution> {
    Some(Resolution {
        physical_address: va + 0x4000_0000,
        io: false,
    })
}

/// Prices `access` on `core` at `now` with `resolve`, counting its calls
/// in `asked`.
fn priced(
    m: &mut MemoryModel,
    core: usize,
    now: u64,
    access: &VirtualAccess,
    asked: &Cell<u32>,
    resolve: impl Fn(u64) -> Option<Resolution>,
) -> Result<u64, TranslationMismatch> {
    m.access(
        core,
        now,
        access,
        |va| {
            asked.set(asked.get() + 1);
            resolve(va)
        },
        &mut NoTables,
    )
}

#[test]
fn a_mixed_run_prices_as_data_access_with_the_physical_address() {
    for name in ["a53", "arm11-003"] {
        // By virtual address, the same verifying, by physical address.
        let mut by_va = model_with(name, 2, false);
        let mut verified = model_with(name, 2, true);
        let mut plain = model_with(name, 2, false);
        for m in [&mut by_va, &mut verified, &mut plain] {
            enable_mmu(m, 0, 0x4100_0000, 1);
            enable_mmu(m, 1, 0x4100_0000, 2);
        }
        let mut seq = Sequence::new(48);
        let mut now = [0u64; 2];
        let asked = Cell::new(0);
        let mut accesses = 0;
        for _ in 0..40_000 {
            let core = seq.below(2) as usize;
            let roll = seq.below(1000);
            if roll < 2 {
                let event = if seq.below(2) == 0 {
                    SystemEvent::RegisterWrite {
                        register: TranslationRegister::Ttbr0El1,
                        value: ttbr(0x4100_0000, seq.below(3) as u16 + 1),
                    }
                } else {
                    SystemEvent::Tlbi {
                        tlbi: Tlbi {
                            operation: TlbiOperation::VmallE1,
                            broadcast: seq.below(2) == 0,
                        },
                        operand: 0,
                    }
                };
                for m in [&mut by_va, &mut verified, &mut plain] {
                    m.system_event(core, &event);
                }
                continue;
            }
            if roll < 200 {
                let fetch = BlockFetch {
                    virtual_address: 0x8_0000 + seq.below(64) * 44,
                    physical_address: 0x4008_0000 + seq.below(64) * 44,
                    bytes: 16,
                    el: if seq.below(500) == 0 {
                        ExceptionLevel::El3
                    } else {
                        ExceptionLevel::El1
                    },
                };
                let stalls: Vec<u64> = [&mut by_va, &mut verified, &mut plain]
                    .into_iter()
                    .map(|m| m.instruction_fetch(core, now[core], &fetch))
                    .collect();
                assert!(stalls.iter().all(|&s| s == stalls[0]), "{name}: {stalls:?}");
                now[core] += 1 + stalls[0];
                continue;
            }
            // Mostly near accesses (the filter and the page cache answer),
            // some in other pages, both halves of the address space.
            let page = seq.below(if roll < 950 { 4 } else { 600 });
            // (The upper half's pages in other slots than the lower's.)
            let half = if seq.below(10) == 0 {
                0xffff_0000_0008_0000
            } else {
                0
            };
            let va = half | (0x20_0000 + page * 0x1000 + seq.below(64) * 64 + seq.below(8) * 8);
            let access = VirtualAccess {
                kind: if seq.below(8) == 0 {
                    AccessKind::Store
                } else {
                    AccessKind::Load
                },
                ..load(va)
            };
            let stall = priced(&mut by_va, core, now[core], &access, &asked, ram).unwrap();
            let checked = priced(&mut verified, core, now[core], &access, &Cell::new(0), ram);
            let physical = ram(va).unwrap().physical_address;
            let expected = plain.data_access(
                core,
                now[core],
                &DataAccess {
                    virtual_address: va,
                    physical_address: physical,
                    size: 8,
                    kind: access.kind,
                    el: access.el,
                    io: false,
                },
            );
            assert_eq!((stall, checked), (expected, Ok(expected)), "{name}");
            now[core] += 1 + stall;
            accesses += 1;
        }
        for core in 0..2 {
            assert_eq!(by_va.core_stats(core), plain.core_stats(core), "{name}");
            assert_eq!(verified.core_stats(core), plain.core_stats(core), "{name}");
        }
        // (A page's loads and stores have entries of their own in one
        // slot: a store between loads costs two questions.)
        assert!(
            asked.get() < accesses / 2,
            "{name}: asked {} times for {accesses} accesses",
            asked.get()
        );
    }
}

#[test]
fn the_physical_address_is_asked_only_for_a_page_not_kept() {
    let mut m = model_with("arm11-003", 2, false);
    let asked = Cell::new(0);
    let mut now = 0;
    for offset in [0, 0x40, 0x80, 0xff8] {
        now += 10 + priced(&mut m, 0, now, &load(0x20_0000 + offset), &asked, ram).unwrap();
    }
    assert_eq!(asked.get(), 1, "one page, asked once");
    // The other direction, another context, another core: asked again.
    let store = VirtualAccess {
        kind: AccessKind::Store,
        ..load(0x20_0000)
    };
    let user = VirtualAccess {
        el: ExceptionLevel::El0,
        context: TranslationContext { id: 0, el10: true },
        ..load(0x20_0000)
    };
    now += 10 + priced(&mut m, 0, now, &store, &asked, ram).unwrap();
    now += 10 + priced(&mut m, 0, now, &user, &asked, ram).unwrap();
    now += 10 + priced(&mut m, 1, now, &load(0x20_0000), &asked, ram).unwrap();
    assert_eq!(asked.get(), 4);
    // I/O and unanswered addresses are never kept.
    let io = |va| {
        Some(Resolution {
            physical_address: va,
            io: true,
        })
    };
    for resolve in [&io as &dyn Fn(u64) -> Option<Resolution>, &|_| None] {
        let before = asked.get();
        for _ in 0..2 {
            now += 10 + priced(&mut m, 0, now, &load(0x90_0000), &asked, resolve).unwrap();
        }
        assert_eq!(asked.get(), before + 2);
    }
}

/// Which of core 0's pages (lower half, upper half) and core 1's (lower)
/// are still kept after `event` on core 0.
fn kept_after(event: impl FnOnce(&mut MemoryModel)) -> [bool; 3] {
    let mut m = model_with("a53", 2, false);
    enable_mmu(&mut m, 0, 0x4100_0000, 1);
    let low = load(0x20_0000);
    let high = load(0xffff_0000_0030_1000);
    let asked = Cell::new(0);
    let mut now = 0;
    for (core, access) in [(0, &low), (0, &high), (1, &low)] {
        now += 10 + priced(&mut m, core, now, access, &asked, ram).unwrap();
    }
    event(&mut m);
    // Another line of each page (the filter knows only the first).
    [(0, &low), (0, &high), (1, &low)].map(|(core, access)| {
        let before = asked.get();
        let next = VirtualAccess {
            virtual_address: access.virtual_address + 0x100,
            ..*access
        };
        now += 10 + priced(&mut m, core, now, &next, &asked, ram).unwrap();
        asked.get() == before
    })
}

#[test]
fn translation_changes_forget_what_they_may_change() {
    assert_eq!(kept_after(|_| {}), [true, true, true]);
    let tlbi = |operation, broadcast| {
        move |m: &mut MemoryModel| {
            m.system_event(
                0,
                &SystemEvent::Tlbi {
                    tlbi: Tlbi {
                        operation,
                        broadcast,
                    },
                    operand: 0,
                },
            );
        }
    };
    // Any TLBI, even local, even one the TLBs do not model: every core.
    assert_eq!(
        kept_after(tlbi(TlbiOperation::VmallE1, false)),
        [false, false, false]
    );
    assert_eq!(
        kept_after(tlbi(TlbiOperation::Ipas2E1, false)),
        [false, false, false]
    );
    let written = |register, value| {
        move |m: &mut MemoryModel| {
            write(m, 0, register, value);
        }
    };
    assert_eq!(
        kept_after(written(TranslationRegister::Ttbr0El1, ttbr(0x4100_0000, 2))),
        [false, true, true]
    );
    // enable_mmu wrote TTBR1 = 0x4000_0000: the same table is no change.
    assert_eq!(
        kept_after(written(TranslationRegister::Ttbr1El1, ttbr(0x4000_0000, 5))),
        [true, true, true]
    );
    assert_eq!(
        kept_after(written(TranslationRegister::Ttbr1El1, 0x4010_0000)),
        [true, false, true]
    );
    assert_eq!(
        kept_after(written(TranslationRegister::TcrEl1, common::LINUX_TCR)),
        [false, false, true]
    );
    assert_eq!(
        kept_after(|m| {
            m.system_event(0, &SystemEvent::WorldSwitch { secure: false });
        }),
        [false, false, true]
    );
    // A block at EL3 (entering the monitor), and one back at EL1.
    let block = |el| BlockFetch {
        virtual_address: 0x1000,
        physical_address: 0x1000,
        bytes: 4,
        el,
    };
    assert_eq!(
        kept_after(|m| {
            m.instruction_fetch(0, 1_000_000, &block(ExceptionLevel::El1));
            m.instruction_fetch(0, 1_000_010, &block(ExceptionLevel::El0));
        }),
        [true, true, true]
    );
    assert_eq!(
        kept_after(|m| {
            m.instruction_fetch(0, 1_000_000, &block(ExceptionLevel::El3));
        }),
        [false, false, true]
    );
}

#[test]
fn verifying_finds_a_page_kept_past_a_change_and_not_verifying_uses_it() {
    let moved = |va| {
        Some(Resolution {
            physical_address: va + 0x5000_0000,
            io: false,
        })
    };
    for verify in [false, true] {
        let mut m = model_with("arm11-003", 1, verify);
        let asked = Cell::new(0);
        let first = priced(&mut m, 0, 0, &load(0x20_0000), &asked, ram).unwrap();
        // The mapping changes without an invalidation (a guest that breaks
        // the architecture's rule, or a model that forgot one).
        let next = priced(&mut m, 0, 100 + first, &load(0x20_0100), &asked, moved);
        if verify {
            assert_eq!(
                next,
                Err(TranslationMismatch {
                    virtual_address: 0x20_0100,
                    cached: 0x4020_0100,
                    resolved: Resolution {
                        physical_address: 0x5020_0100,
                        io: false
                    },
                })
            );
            assert_eq!(asked.get(), 2);
        } else {
            assert!(next.is_ok());
            assert_eq!(asked.get(), 1, "the kept page answers");
        }
    }
    // Verifying prices as not verifying while the answers agree (the mixed
    // run above compares the two over a long run).
    let mut m = model_with("arm11-003", 1, true);
    let asked = Cell::new(0);
    let mut now = 0;
    for offset in [0, 0x100, 0x200] {
        now += 10 + priced(&mut m, 0, now, &load(0x20_0000 + offset), &asked, ram).unwrap();
    }
    assert_eq!(asked.get(), 3, "asked every time");
}
