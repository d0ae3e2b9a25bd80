//! The bus queue when requests are presented out of time order: in time order it is first come, first served; in any order no request starts before it arrives and no two overlap; requests that do not conflict get the same answers in any order; and the answers depend only on the calls.

mod common;

use common::Sequence;
use tandem_memmodel::bus::BusQueue;

const SERVICE: u64 = 56;
const SKEW: u64 = 1_000;

/// Arrivals of `count` requests, about `mean_gap` ns apart on average.
fn arrivals(seed: u64, count: usize, mean_gap: u64) -> Vec<u64> {
    let mut sequence = Sequence::new(seed);
    let mut time = 0;
    (0..count)
        .map(|_| {
            time += sequence.below(2 * mean_gap + 1);
            time
        })
        .collect()
}

/// Presents `arrivals` (in time order) out of order, as cores up to `SKEW`
/// apart would: shuffled within consecutive blocks of `SKEW` ns.
fn skewed(seed: u64, arrivals: &[u64]) -> Vec<u64> {
    let mut sequence = Sequence::new(seed);
    let mut out: Vec<u64> = Vec::with_capacity(arrivals.len());
    for chunk in arrivals.chunk_by(|a, b| a / SKEW == b / SKEW) {
        let mut chunk = chunk.to_vec();
        for i in (1..chunk.len()).rev() {
            let j = sequence.below(i as u64 + 1) as usize;
            chunk.swap(i, j);
        }
        out.extend(chunk);
    }
    out
}

fn serve(order: &[u64]) -> (Vec<u64>, BusQueue) {
    let mut bus = BusQueue::new(SERVICE, 20_000, 4096);
    let starts = order.iter().map(|&a| bus.reserve(a)).collect();
    (starts, bus)
}

#[test]
fn in_time_order_it_is_first_come_first_served() {
    for (seed, gap) in [(1, 20), (2, 56), (3, 200)] {
        let arrivals = arrivals(seed, 5_000, gap);
        let (starts, _) = serve(&arrivals);
        let mut free_at = 0;
        for (&arrival, &start) in arrivals.iter().zip(&starts) {
            let expected = arrival.max(free_at);
            assert_eq!(start, expected);
            free_at = expected + SERVICE;
        }
    }
}

#[test]
fn out_of_order_no_request_is_early_and_none_overlap() {
    for (seed, gap) in [(4, 20), (5, 56), (6, 100), (7, 400)] {
        let arrivals = arrivals(seed, 5_000, gap);
        let order = skewed(seed + 100, &arrivals);
        let (starts, bus) = serve(&order);
        let mut served: Vec<(u64, u64)> = order.iter().copied().zip(starts).collect();
        for &(arrival, start) in &served {
            assert!(
                start >= arrival,
                "served at {start} before arriving at {arrival}"
            );
        }
        served.sort_by_key(|&(_, start)| start);
        for pair in served.windows(2) {
            assert!(
                pair[0].1 + SERVICE <= pair[1].1,
                "two requests at once: {pair:?}"
            );
        }
        assert_eq!(bus.stats().before_history, 0);
    }
}

#[test]
fn requests_that_do_not_conflict_get_the_same_answers_in_any_order() {
    // At least a service time apart: nobody ever waits, whatever the order.
    let mut sequence = Sequence::new(8);
    let mut time = 0;
    let arrivals: Vec<u64> = (0..2_000)
        .map(|_| {
            time += SERVICE + sequence.below(100);
            time
        })
        .collect();
    let order = skewed(9, &arrivals);
    assert_ne!(order, arrivals, "the order was not shuffled");
    let (starts, _) = serve(&order);
    assert_eq!(starts, order);
}

#[test]
fn a_late_request_in_free_time_is_served_as_in_time_order() {
    // Requests at 0 and 500 known; one at 200 heard of last is served at
    // 200, as it would have been in time order.
    let (in_order, _) = serve(&[0, 200, 500]);
    let (late, _) = serve(&[0, 500, 200]);
    assert_eq!(in_order, [0, 200, 500]);
    assert_eq!(late, [0, 500, 200]);
}

#[test]
fn the_same_calls_give_the_same_answers() {
    let order = skewed(11, &arrivals(10, 5_000, 30));
    assert_eq!(serve(&order).0, serve(&order).0);
}

#[test]
fn busy_time_is_conserved_out_of_order() {
    // However presented, a saturated burst keeps the bus busy for a
    // service time per request; presented out of order it may leave gaps
    // shorter than a service time, never longer.
    let arrivals = arrivals(12, 2_000, 20);
    let order = skewed(13, &arrivals);
    let (starts, _) = serve(&order);
    let mut sorted = starts.clone();
    sorted.sort_unstable();
    let (in_order, _) = serve(&arrivals);
    let span = |s: &[u64]| s.last().unwrap() + SERVICE - s[0];
    let idle = span(&sorted) - SERVICE * sorted.len() as u64;
    println!(
        "burst of 2000: busy span in order {}, out of order {} (idle {idle})",
        span(&in_order),
        span(&sorted)
    );
    for pair in sorted.windows(2) {
        let gap = pair[1] - pair[0] - SERVICE;
        let arrived_before = order
            .iter()
            .zip(&starts)
            .any(|(&a, &s)| s == pair[1] && a <= pair[0] + SERVICE);
        assert!(
            gap < SERVICE || !arrived_before,
            "an idle gap of {gap} with a request waiting"
        );
    }
}
