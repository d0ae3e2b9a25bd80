//! Stolen-time accounting for Arm PV time (paper 000 §4, DEN0057A): per core,
//! the time the RTOS held the core while Linux had work there. Linux reads
//! the total as its steal time, so its scheduler sees the capacity the RTOS
//! leaves it.
//!
//! The firmware feeds one [`StealClock`] per core with the world switches:
//! the RTOS takes the core (noting whether Linux was runnable then: running,
//! not waiting in WFI, not off), and the RTOS gives it back. Only the first
//! kind of period counts. Times are generic-counter ticks; the total is kept
//! in ticks and converted as a whole, so rounding never accumulates.

/// Nanoseconds in a second.
const NS_PER_S: u64 = 1_000_000_000;

/// `ticks` of a counter running at `hz` in nanoseconds, without overflow for
/// any `ticks` whose result fits in a u64 (saturating beyond); 0 for `hz` 0.
pub const fn ticks_to_ns(ticks: u64, hz: u64) -> u64 {
    if hz == 0 {
        return 0;
    }
    // Whole seconds and the remainder separately: `ticks * 10^9` would
    // overflow after about 5 minutes at 62.5 MHz, the remainder (below `hz`)
    // times 10^9 never does for any real counter (up to 18 GHz), so the
    // yield path needs no 128-bit division.
    let whole = (ticks / hz).saturating_mul(NS_PER_S);
    let rem = ticks % hz;
    let part = if hz <= u64::MAX / NS_PER_S {
        rem * NS_PER_S / hz
    } else {
        (rem as u128 * NS_PER_S as u128 / hz as u128) as u64
    };
    whole.saturating_add(part)
}

/// One core's account.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StealClock {
    /// When the RTOS took the core, and whether Linux was runnable then;
    /// `None` while the RTOS does not hold it.
    held_since: Option<(u64, bool)>,
    /// Stolen ticks so far.
    stolen: u64,
}

impl StealClock {
    /// Nothing stolen, the RTOS not holding the core.
    pub const ZERO: Self = Self {
        held_since: None,
        stolen: 0,
    };

    /// The RTOS took the core at counter `now`; `linux_runnable`: Linux on
    /// this core was running (not idle in WFI, not off). A second call
    /// before [`StealClock::rtos_leaves`] keeps the first: the RTOS already
    /// held the core.
    pub fn rtos_takes(&mut self, now: u64, linux_runnable: bool) {
        if self.held_since.is_none() {
            self.held_since = Some((now, linux_runnable));
        }
    }

    /// The RTOS gave the core back at counter `now`. Returns true if the
    /// stolen total grew (the caller then publishes it). A counter that went
    /// backwards adds nothing rather than wrapping to a huge steal.
    pub fn rtos_leaves(&mut self, now: u64) -> bool {
        match self.held_since.take() {
            Some((since, true)) if now > since => {
                self.stolen = self.stolen.saturating_add(now - since);
                true
            }
            _ => false,
        }
    }

    /// Whether the RTOS holds the core now.
    pub const fn rtos_holds(&self) -> bool {
        self.held_since.is_some()
    }

    /// Stolen counter ticks so far.
    pub const fn stolen_ticks(&self) -> u64 {
        self.stolen
    }

    /// Stolen time so far in nanoseconds, for a counter at `hz`.
    pub const fn stolen_ns(&self, hz: u64) -> u64 {
        ticks_to_ns(self.stolen, hz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HZ: u64 = 62_500_000;

    #[test]
    fn conversion_is_exact_and_does_not_overflow() {
        assert_eq!(ticks_to_ns(0, HZ), 0);
        assert_eq!(ticks_to_ns(1, HZ), 16);
        assert_eq!(ticks_to_ns(HZ, HZ), NS_PER_S);
        assert_eq!(ticks_to_ns(62_500, HZ), 1_000_000);
        // Ten years at 62.5 MHz: ticks * 10^9 would overflow a u64 long before.
        let ten_years = 10 * 365 * 86_400 * HZ;
        assert_eq!(ticks_to_ns(ten_years, HZ), 10 * 365 * 86_400 * NS_PER_S);
        // A counter rate that does not divide 10^9 rounds down, never up.
        assert_eq!(ticks_to_ns(1, 3), 333_333_333);
        assert_eq!(ticks_to_ns(4, 3), 1_333_333_333);
        assert_eq!(ticks_to_ns(u64::MAX, 1), u64::MAX, "saturates");
        assert_eq!(ticks_to_ns(u64::MAX, u64::MAX), NS_PER_S);
        assert_eq!(ticks_to_ns(5, 0), 0);
    }

    #[test]
    fn counts_only_while_linux_had_work() {
        let mut c = StealClock::ZERO;
        c.rtos_takes(100, true);
        assert!(c.rtos_holds());
        assert!(c.rtos_leaves(150));
        assert_eq!(c.stolen_ticks(), 50);
        // Linux idle (WFI) or off when the RTOS came: not stolen.
        c.rtos_takes(200, false);
        assert!(!c.rtos_leaves(1_000));
        assert_eq!(c.stolen_ticks(), 50);
        c.rtos_takes(2_000, true);
        assert!(c.rtos_leaves(2_025));
        assert_eq!(c.stolen_ticks(), 75);
        assert_eq!(c.stolen_ns(HZ), 75 * 16);
    }

    #[test]
    fn odd_event_orders_do_no_harm() {
        let mut c = StealClock::ZERO;
        // Leaving without taking: nothing.
        assert!(!c.rtos_leaves(10));
        // Taking twice keeps the first start (and its runnable flag).
        c.rtos_takes(10, true);
        c.rtos_takes(40, false);
        assert!(c.rtos_leaves(50));
        assert_eq!(c.stolen_ticks(), 40);
        // Time going backwards or standing still adds nothing.
        c.rtos_takes(100, true);
        assert!(!c.rtos_leaves(90));
        c.rtos_takes(100, true);
        assert!(!c.rtos_leaves(100));
        assert_eq!(c.stolen_ticks(), 40);
        assert!(!c.rtos_holds());
    }

    /// xorshift64*: a tiny deterministic generator.
    fn next(s: &mut u64) -> u64 {
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    #[test]
    fn random_switches_match_a_model_and_never_decrease() {
        // A core alternating between Linux (busy or idle) and the RTOS with
        // random durations; the model sums the RTOS periods that began while
        // Linux was busy.
        let mut seed = 0xDEAD_BEEF_u64;
        let mut c = StealClock::ZERO;
        let (mut now, mut model, mut last) = (0u64, 0u64, 0u64);
        for _ in 0..100_000 {
            now += next(&mut seed) % 100_000;
            let busy = !next(&mut seed).is_multiple_of(3);
            c.rtos_takes(now, busy);
            let held = next(&mut seed) % 50_000;
            now += held;
            c.rtos_leaves(now);
            if busy {
                model += held;
            }
            assert!(c.stolen_ns(HZ) >= last);
            last = c.stolen_ns(HZ);
        }
        assert_eq!(c.stolen_ticks(), model);
        assert_eq!(c.stolen_ns(HZ), model * 16);
    }

    #[test]
    fn half_the_core_is_half_stolen() {
        // 1 s of a 500 us / 1 ms RTOS load on a core Linux keeps busy.
        let mut c = StealClock::ZERO;
        let period = HZ / 1000;
        for k in 0..1000 {
            c.rtos_takes(k * period, true);
            c.rtos_leaves(k * period + period / 2);
        }
        assert_eq!(c.stolen_ns(HZ), NS_PER_S / 2);
    }
}
