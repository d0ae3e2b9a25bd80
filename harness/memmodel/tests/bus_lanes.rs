//! The bus's lanes under requests presented out of time order, as cores a quantum apart present them: no request starts before it arrives, a core's requests keep its order a service time apart, a core alone is first come first served, k cores at the bus cost k turns, and the answers depend only on the calls.

mod common;

use common::Sequence;
use tandem_memmodel::bus::{BusLanes, Transfer};

const SERVICE: u64 = 10;
const QUANTUM: u64 = 1_000;

/// Requests of four cores, each in its own time order, presented in the
/// order the round robin runs the cores: a quantum of one core's
/// requests, then the next core's. Each core makes a request every
/// `1..=2 * gap` ns, sometimes a burst of five at once.
fn presented(seed: u64, gap: u64, until: u64) -> Vec<(usize, u64)> {
    let mut sequence = Sequence::new(seed);
    let mut per_core: Vec<Vec<u64>> = vec![Vec::new(); 4];
    for requests in per_core.iter_mut() {
        let mut time = sequence.below(gap);
        while time < until {
            let burst = if sequence.below(4) == 0 { 5 } else { 1 };
            requests.extend(std::iter::repeat_n(time, burst));
            time += 1 + sequence.below(2 * gap);
        }
    }
    let mut order = Vec::new();
    let mut turn = 0;
    while turn * QUANTUM < until {
        for (core, requests) in per_core.iter().enumerate() {
            let window = turn * QUANTUM..(turn + 1) * QUANTUM;
            order.extend(
                requests
                    .iter()
                    .filter(|t| window.contains(t))
                    .map(|&t| (core, t)),
            );
        }
        turn += 1;
    }
    order
}

fn serve(order: &[(usize, u64)]) -> Vec<u64> {
    let mut bus = BusLanes::new(4, SERVICE, 4_000);
    order
        .iter()
        .map(|&(core, arrival)| bus.reserve(core, arrival, Transfer::Demand, 0))
        .collect()
}

#[test]
fn no_request_is_early_and_each_core_keeps_its_order() {
    for (seed, gap) in [(1, 20), (2, 60), (3, 200)] {
        let order = presented(seed, gap, 50_000);
        let starts = serve(&order);
        let mut last_start = [None::<u64>; 4];
        for (&(core, arrival), &start) in order.iter().zip(&starts) {
            assert!(start >= arrival, "served before it arrived");
            if let Some(previous) = last_start[core] {
                assert!(start >= previous + SERVICE, "core {core} overlapped itself");
            }
            last_start[core] = Some(start);
        }
    }
}

#[test]
fn a_core_alone_is_first_come_first_served() {
    let order: Vec<(usize, u64)> = presented(4, 15, 20_000)
        .into_iter()
        .filter(|&(core, _)| core == 2)
        .collect();
    let starts = serve(&order);
    let mut free_at = 0;
    for (&(_, arrival), &start) in order.iter().zip(&starts) {
        assert_eq!(start, arrival.max(free_at));
        free_at = start + SERVICE;
    }
}

#[test]
fn cores_always_at_the_bus_cost_a_turn_each() {
    for others in 0..=3usize {
        let mut bus = BusLanes::new(4, SERVICE, 4_000);
        // Cores 1..=others keep a backlog at the bus from 0 to 10 000.
        for core in 1..=others {
            for _ in 0..1_000 {
                bus.reserve(core, 0, Transfer::Demand, 0);
            }
        }
        let start = bus.reserve(0, 5_000, Transfer::Demand, 0);
        assert_eq!(start - 5_000, others as u64 * SERVICE);
    }
}

#[test]
fn the_same_calls_give_the_same_answers() {
    let order = presented(5, 30, 20_000);
    assert_eq!(serve(&order), serve(&order));
}
