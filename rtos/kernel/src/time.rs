//! The passing of time: cyclic handlers, each core's next timer event, and
//! `advance`, which a core's timer interrupt calls to expire timeouts and
//! release cyclic handlers.
//!
//! A cyclic handler's releases stay on the grid `start + phase + k * period`
//! whatever the interrupt latency: the next release is computed from the
//! previous release, never from the time `advance` ran. When `advance` runs a
//! full period or more late, the releases that have passed are not replayed
//! in a burst: the handler runs once and the others count as missed.

use crate::config::CyclicConfig;
use crate::types::{Error, TaskState, WaitReason, WaitResult};
use crate::{CyclicId, Kernel, MAX_CYCLICS, Ticks};

/// A cyclic handler's run-time state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cyclic {
    pub(crate) core: u8,
    pub(crate) period: Ticks,
    pub(crate) phase: Ticks,
    pub(crate) started: bool,
    /// The next release, when started.
    pub(crate) next: Ticks,
    pub(crate) misses: u64,
}

impl Cyclic {
    pub(crate) const EMPTY: Cyclic = Cyclic {
        core: 0,
        period: 1,
        phase: 0,
        started: false,
        next: 0,
        misses: 0,
    };

    pub(crate) fn new(c: &CyclicConfig, now: Ticks) -> Cyclic {
        Cyclic {
            core: c.core,
            period: c.period,
            phase: c.phase,
            started: c.start,
            next: now.saturating_add(c.phase),
            misses: 0,
        }
    }
}

impl Kernel {
    fn cyclic(&self, c: CyclicId) -> Result<usize, Error> {
        let i = c.0 as usize;
        if i < self.cyclic_count {
            Ok(i)
        } else {
            Err(Error::Id)
        }
    }

    /// sta_cyc: the first release is at `now + phase`. Restarts the grid if
    /// the handler was already started. Asks its core to reprogram its timer.
    pub fn start_cyclic(&mut self, c: CyclicId, now: Ticks) -> Result<(), Error> {
        let i = self.cyclic(c)?;
        let cyc = &mut self.cyclics[i];
        cyc.started = true;
        cyc.next = now.saturating_add(cyc.phase);
        let core = cyc.core;
        self.request(core);
        Ok(())
    }

    /// stp_cyc: no more releases until started again.
    pub fn stop_cyclic(&mut self, c: CyclicId) -> Result<(), Error> {
        let i = self.cyclic(c)?;
        self.cyclics[i].started = false;
        Ok(())
    }

    /// Sets the core, period and phase of a stopped cyclic handler (for
    /// workloads chosen at boot). [`Error::Parameter`] for a zero period or
    /// a core the kernel does not schedule; [`Error::Object`] if `c` is
    /// started (stop it first: its grid would jump).
    pub fn set_cyclic(
        &mut self,
        c: CyclicId,
        core: u8,
        period: Ticks,
        phase: Ticks,
    ) -> Result<(), Error> {
        let i = self.cyclic(c)?;
        if period == 0 || core as usize >= self.cores {
            return Err(Error::Parameter);
        }
        let cyc = &mut self.cyclics[i];
        if cyc.started {
            return Err(Error::Object);
        }
        cyc.core = core;
        cyc.period = period;
        cyc.phase = phase;
        Ok(())
    }

    /// The core cyclic handler `c` runs on.
    pub fn cyclic_core(&self, c: CyclicId) -> Result<u8, Error> {
        Ok(self.cyclics[self.cyclic(c)?].core)
    }

    /// Releases of cyclic handler `c` skipped because `advance` ran a full
    /// period or more after them.
    pub fn cyclic_misses(&self, c: CyclicId) -> Result<u64, Error> {
        Ok(self.cyclics[self.cyclic(c)?].misses)
    }

    /// The earliest timeout of a task assigned to `core` or release of a
    /// started cyclic handler of `core`: when its timer must next fire.
    /// `None`: nothing pending (or no such core).
    pub fn next_event(&self, core: u8) -> Option<Ticks> {
        let timeouts = self.tasks[..self.task_count]
            .iter()
            .filter(|t| t.core == core)
            .filter_map(|t| t.deadline);
        let releases = self.cyclics[..self.cyclic_count]
            .iter()
            .filter(|c| c.started && c.core == core)
            .map(|c| c.next);
        timeouts.chain(releases).min()
    }

    /// Does everything due on `core` at `now`: tasks whose timeout has come
    /// are released, earliest deadline first (a delay ends with `Ok`, any
    /// other wait with [`Error::Timeout`]); each started cyclic handler due
    /// is written into `fired`, in ID order, for the firmware to run, and its
    /// next release set one period after the last one due (skipping, and
    /// counting as missed, any releases that are also already due). Returns
    /// how many cyclic handlers fired.
    pub fn advance(&mut self, core: u8, now: Ticks, fired: &mut [CyclicId; MAX_CYCLICS]) -> usize {
        if core as usize >= self.cores {
            return 0;
        }
        while let Some(i) = self.first_timeout(core, now) {
            let result = match self.tasks[i].state {
                TaskState::Waiting(WaitReason::Delay) => Ok(WaitResult::Ok),
                _ => Err(Error::Timeout),
            };
            self.release(i, result);
        }
        let mut n = 0;
        for (id, c) in self.cyclics[..self.cyclic_count].iter_mut().enumerate() {
            if !c.started || c.core != core || c.next > now {
                continue;
            }
            fired[n] = CyclicId(id as u8);
            n += 1;
            let skipped = (now - c.next) / c.period;
            c.misses += skipped;
            c.next = c
                .next
                .saturating_add(skipped.saturating_add(1).saturating_mul(c.period));
        }
        n
    }

    /// The task of `core` whose deadline is earliest and not after `now`
    /// (the lowest ID among equals).
    fn first_timeout(&self, core: u8, now: Ticks) -> Option<usize> {
        let mut best: Option<(Ticks, usize)> = None;
        for (i, t) in self.tasks[..self.task_count].iter().enumerate() {
            if t.core == core
                && let Some(d) = t.deadline
                && d <= now
                && best.is_none_or(|(b, _)| d < b)
            {
                best = Some((d, i));
            }
        }
        best.map(|(_, i)| i)
    }
}

/// Whether a core with nothing to run may give itself away at `now` (SafeG's
/// YIELD: to the monitor, and Linux), its timer armed for `next` (`None`:
/// not armed). Giving the core away, and being called back for an
/// interrupt that comes meanwhile, takes up to `leave` ticks with
/// interrupts masked: an event due sooner than that would wait for the
/// switch out and back, however short the interrupt's own path. So the core
/// leaves only if its next event is more than `leave` ticks away, and
/// otherwise waits for it here, where the interrupt is taken at once. A
/// deep idle state is chosen by its exit latency the same way.
///
/// This holds when the normal world calls the core too (the monitor's
/// doorbell, or Linux's interrupts, pending as FIQs): both rank below every
/// RTOS interrupt (`tandem_abi::priority`), so the timer is still signalled
/// and the wait ends with it, at most `leave` ticks later; a hostile Linux
/// that keeps ringing cannot make the core leave just before its timer.
pub const fn may_leave(now: Ticks, next: Option<Ticks>, leave: Ticks) -> bool {
    match next {
        None => true,
        Some(at) => at.saturating_sub(now) > leave,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_leaves_only_if_its_next_event_is_further_than_leaving_takes() {
        // No timer armed: nothing to wait for.
        assert!(may_leave(1000, None, 50));
        assert!(may_leave(1000, Some(1051), 50));
        assert!(!may_leave(1000, Some(1050), 50), "due as the switch ends");
        assert!(!may_leave(1000, Some(1001), 50));
        // Due already (its interrupt is pending): take it, do not leave.
        assert!(!may_leave(1000, Some(1000), 50));
        assert!(!may_leave(1000, Some(3), 50));
        // No exit latency: leave unless the event is due.
        assert!(may_leave(1000, Some(1001), 0));
        assert!(!may_leave(1000, Some(1000), 0));
        // Far ends of the counter.
        assert!(may_leave(0, Some(Ticks::MAX), Ticks::MAX - 1));
        assert!(!may_leave(0, Some(Ticks::MAX), Ticks::MAX));
        assert!(!may_leave(Ticks::MAX, Some(Ticks::MAX), 0));
    }

    use crate::testkit::*;
    use crate::types::Timeout;

    /// C0: core 0, period 100, phase 10. C1: core 1, period 7, phase 0.
    fn started(now: Ticks) -> Kernel {
        let cyclics = CYCLICS.map(|c| CyclicConfig { start: true, ..c });
        kernel_with_at(
            &Config {
                cyclics: &cyclics,
                ..CONFIG
            },
            now,
        )
    }

    #[test]
    fn first_release_is_at_start_plus_phase() {
        let mut k = started(1000);
        assert_eq!(k.next_event(0), Some(1010));
        assert_eq!(k.next_event(1), Some(1000));
        assert_eq!(k.next_event(2), None);
        assert_eq!(k.next_event(9), None);
        assert_eq!(advance(&mut k, 0, 1009), []);
        assert_eq!(advance(&mut k, 0, 1010), [C0]);
        assert_eq!(k.next_event(0), Some(1110));
        assert_eq!(advance(&mut k, 0, 1010), [], "once per release");
        // Each core releases its own handlers only.
        assert_eq!(advance(&mut k, 1, 1000), [C1]);
        assert_eq!(advance(&mut k, 2, 5000), []);
        assert_eq!(advance(&mut k, 9, 5000), []);
        // Not started: no events.
        let mut k = kernel_with_at(&CONFIG, 1000);
        assert_eq!(k.next_event(0), None);
        assert_eq!(advance(&mut k, 0, 5000), []);
        k.start_cyclic(C0, 2000).unwrap();
        assert_eq!(k.next_event(0), Some(2010));
    }

    #[test]
    fn releases_stay_on_the_grid_over_many_periods() {
        let mut k = started(0);
        let mut seed = 7u64;
        for n in 0..10_000u64 {
            let release = 10 + n * 100;
            assert_eq!(k.next_event(0), Some(release));
            assert_eq!(advance(&mut k, 0, release - 1), []);
            // However late the interrupt (less than a period), no drift.
            let late = xorshift(&mut seed) % 100;
            assert_eq!(advance(&mut k, 0, release + late), [C0], "release {n}");
        }
        assert_eq!(k.next_event(0), Some(10 + 10_000 * 100));
        assert_eq!(k.cyclic_misses(C0), Ok(0));
    }

    #[test]
    fn set_cyclic_only_when_stopped() {
        let mut k = kernel_with_at(&CONFIG, 0);
        assert_eq!(k.set_cyclic(C0, 1, 50, 5), Ok(()));
        k.start_cyclic(C0, 1000).unwrap();
        assert_eq!(k.next_event(0), None, "moved to core 1");
        assert_eq!(k.next_event(1), Some(1005), "C1 is not started: C0 alone");
        assert_eq!(advance(&mut k, 1, 1005), [C0]);
        assert_eq!(k.next_event(1), Some(1055));
        assert_eq!(k.set_cyclic(C0, 1, 60, 0), Err(Error::Object));
        k.stop_cyclic(C0).unwrap();
        assert_eq!(k.set_cyclic(C0, 1, 0, 0), Err(Error::Parameter));
        assert_eq!(k.set_cyclic(C0, 99, 10, 0), Err(Error::Parameter));
        assert_eq!(k.set_cyclic(CyclicId(99), 0, 10, 0), Err(Error::Id));
    }

    #[test]
    fn stop_and_restart() {
        let mut k = started(0);
        assert_eq!(advance(&mut k, 0, 10), [C0]);
        k.stop_cyclic(C0).unwrap();
        assert_eq!(k.next_event(0), None);
        assert_eq!(advance(&mut k, 0, 1000), []);
        assert_eq!(
            k.cyclic_misses(C0),
            Ok(0),
            "stopped releases are not missed"
        );
        k.take_dispatch_requests();
        k.start_cyclic(C0, 1234).unwrap();
        assert_eq!(k.take_dispatch_requests(), 0b001, "timer to reprogram");
        assert_eq!(k.next_event(0), Some(1244));
        assert_eq!(advance(&mut k, 0, 1243), []);
        assert_eq!(advance(&mut k, 0, 1244), [C0]);
        // Restarting a running handler moves its grid.
        k.start_cyclic(C0, 1300).unwrap();
        assert_eq!(k.next_event(0), Some(1310));
        // Stopping twice is fine.
        k.stop_cyclic(C1).unwrap();
        k.stop_cyclic(C1).unwrap();
        assert_eq!(k.next_event(1), None);
    }

    #[test]
    fn a_late_advance_fires_once_and_counts_the_misses() {
        let mut k = started(0);
        // Releases at 10, 110, 210, 310; advance runs at 350.
        assert_eq!(advance(&mut k, 0, 350), [C0]);
        assert_eq!(k.cyclic_misses(C0), Ok(3));
        assert_eq!(k.next_event(0), Some(410), "back on the grid");
        assert_eq!(advance(&mut k, 0, 409), []);
        assert_eq!(advance(&mut k, 0, 410), [C0]);
        // Exactly one period late: the release due at that instant is missed.
        assert_eq!(advance(&mut k, 0, 610), [C0]);
        assert_eq!(k.cyclic_misses(C0), Ok(4));
        assert_eq!(k.next_event(0), Some(710));
        // Just under a period late: nothing missed.
        assert_eq!(advance(&mut k, 0, 809), [C0]);
        assert_eq!(k.cyclic_misses(C0), Ok(4));
        assert_eq!(k.cyclic_misses(C1), Ok(0));
    }

    #[test]
    fn several_handlers_fire_in_id_order() {
        let cyclics = [
            CyclicConfig {
                name: "a",
                core: 0,
                period: 5,
                phase: 0,
                start: true,
            },
            CyclicConfig {
                name: "b",
                core: 1,
                period: 5,
                phase: 0,
                start: true,
            },
            CyclicConfig {
                name: "c",
                core: 0,
                period: 10,
                phase: 0,
                start: true,
            },
        ];
        let mut k = kernel_with(&Config {
            cyclics: &cyclics,
            ..CONFIG
        });
        let mut fired = [CyclicId(99); MAX_CYCLICS];
        assert_eq!(k.advance(0, 0, &mut fired), 2);
        assert_eq!(fired[..2], [CyclicId(0), CyclicId(2)]);
        assert_eq!(fired[2], CyclicId(99), "untouched past the count");
        assert_eq!(advance(&mut k, 0, 5), [CyclicId(0)]);
        assert_eq!(advance(&mut k, 0, 10), [CyclicId(0), CyclicId(2)]);
    }

    #[test]
    fn next_event_is_the_earliest_of_timeouts_and_releases() {
        let mut k = started(0);
        run(&mut k, B);
        k.sleep(B, Timeout::After(5), 0).unwrap();
        run(&mut k, C);
        k.delay(C, 50, 0).unwrap();
        assert_eq!(k.next_event(0), Some(5));
        // A task on core 1 counts for core 1 only.
        run(&mut k, G);
        k.sleep(G, Timeout::After(3), 1).unwrap();
        assert_eq!(k.next_event(1), Some(0), "C1 is due at 0");
        advance(&mut k, 1, 0);
        assert_eq!(k.next_event(1), Some(4));
        advance(&mut k, 0, 5);
        assert_eq!(k.take_wait_result(B), Err(Error::Timeout));
        assert_eq!(k.next_event(0), Some(10), "C0 before C's delay");
        assert_eq!(advance(&mut k, 0, 10), [C0]);
        assert_eq!(k.next_event(0), Some(50));
        assert_eq!(advance(&mut k, 0, 50), []);
        assert_eq!(k.take_wait_result(C), Ok(WaitResult::Ok));
        assert_eq!(k.next_event(0), Some(110));
        k.check_invariants();
    }

    #[test]
    fn far_future_times_saturate_instead_of_wrapping() {
        let mut k = started(u64::MAX - 5);
        assert_eq!(k.next_event(0), Some(u64::MAX));
        assert_eq!(advance(&mut k, 0, u64::MAX), [C0]);
        assert_eq!(k.next_event(0), Some(u64::MAX));
        run(&mut k, B);
        k.sleep(B, Timeout::After(100), u64::MAX - 1).unwrap();
        advance(&mut k, 0, u64::MAX);
        assert_eq!(k.take_wait_result(B), Err(Error::Timeout));
    }
}
