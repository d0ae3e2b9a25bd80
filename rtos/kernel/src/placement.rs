//! Where to start a task so that it does not preempt a Linux lock holder
//! (paper 000 §3): Linux publishes, per core, whether it holds a spin lock;
//! before a migratable task starts, the RTOS picks a core where it does not.
//!
//! The rule: the core the task last ran on if Linux there holds no lock;
//! else the first candidate core where Linux holds none; else stay where it
//! was. Never a core outside the candidates (cores the RTOS runs on), never a
//! wait: whatever Linux wrote, the answer comes at once.

/// The core to start a task on. `last`: where it last ran; `candidates`: a
/// bit per core the task may run on; `locked(core)`: whether Linux on that
/// core holds a lock (as far as the RTOS can tell; treat anything odd as
/// locked). `last` is returned unchanged when no candidate is free, even if
/// it is not itself a candidate, so the caller keeps the task where it is.
pub fn pick_core(last: u8, candidates: u64, locked: impl Fn(u8) -> bool) -> u8 {
    let is_candidate = |c: u8| c < 64 && candidates & (1 << c) != 0;
    if is_candidate(last) && !locked(last) {
        return last;
    }
    (0..64u8)
        .filter(|&c| is_candidate(c))
        .find(|&c| !locked(c))
        .unwrap_or(last)
}

/// How long of a dispatch, requested at `requested` and started at `start`
/// (counter readings on any cores), waited for a reschedule SGI: from its
/// sending (`sent`) to the target core's entry (`taken`). Only if the four
/// readings come in that order; any other order means the last SGI sent to
/// this core or the last one it took belongs to another dispatch, and this
/// one started on the core that requested it (`None`).
pub fn handoff_wait(requested: u64, sent: u64, taken: u64, start: u64) -> Option<u64> {
    (requested <= sent && sent <= taken && taken <= start).then(|| taken - sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handoff_wait_needs_the_four_readings_in_order() {
        assert_eq!(handoff_wait(100, 200, 700, 900), Some(500));
        assert_eq!(handoff_wait(100, 100, 100, 100), Some(0));
        // The last SGI was sent before this request: another dispatch's.
        assert_eq!(handoff_wait(100, 50, 700, 900), None);
        // The core took no SGI since this one was sent (it took an older one).
        assert_eq!(handoff_wait(100, 200, 150, 900), None);
        // Taken after the start: the task started without it.
        assert_eq!(handoff_wait(100, 200, 950, 900), None);
        // Never wraps, whatever the readings.
        for (r, s, t, st) in [
            (0, u64::MAX, 0, 0),
            (u64::MAX, 0, 0, u64::MAX),
            (0, 0, u64::MAX, 0),
        ] {
            assert_eq!(handoff_wait(r, s, t, st), None);
        }
    }
    use crate::testkit::xorshift;

    #[test]
    fn stays_when_free_moves_when_locked() {
        let all = 0b1111;
        assert_eq!(pick_core(1, all, |_| false), 1);
        assert_eq!(pick_core(1, all, |c| c == 1), 0);
        assert_eq!(pick_core(1, all, |c| c <= 2), 3);
        assert_eq!(pick_core(1, all, |_| true), 1, "all locked: stay");
        assert_eq!(pick_core(2, 0b1010, |c| c == 1), 3, "only candidates");
        assert_eq!(pick_core(2, 0b0011, |_| false), 0, "last is no candidate");
        assert_eq!(pick_core(2, 0, |_| false), 2, "no candidates: stay");
    }

    #[test]
    fn never_leaves_the_candidates_whatever_linux_wrote() {
        let mut seed = 0x5eed;
        for _ in 0..100_000 {
            let candidates = xorshift(&mut seed) & 0xFF;
            let last = (xorshift(&mut seed) % 8) as u8;
            let states = xorshift(&mut seed);
            let locked = |c: u8| states & (1 << c) != 0;
            let got = pick_core(last, candidates, locked);
            assert!(
                got == last || candidates & (1 << got) != 0,
                "{got} from {last} with {candidates:#b}"
            );
            if candidates & (1 << got) != 0 && got != last {
                assert!(!locked(got), "moved onto a locked core");
                assert!(
                    candidates & (1 << last) == 0 || locked(last),
                    "moved although the last core was free"
                );
            }
        }
    }
}
