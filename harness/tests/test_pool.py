"""Host tests of the pool of boots side by side (tandem/pool.py), with
tasks that stand in for boots."""

from __future__ import annotations

import io
import threading
import time

import pytest

from tandem import pool
from tandem.errors import TandemError
from tandem.platform.timing import Timing


def test_tasks_run_at_most_jobs_at_once_and_results_keep_their_order() -> None:
    running = 0
    most = 0
    lock = threading.Lock()

    def task(n: int) -> pool.Task[int]:
        def run(ctx: pool.Context) -> int:
            nonlocal running, most
            with lock:
                running += 1
                most = max(most, running)
            ctx.note(f"working on {n}")
            # Later tasks end first: the results must still be in order.
            time.sleep(0.05 * (6 - n))
            with lock:
                running -= 1
            return n * n

        return pool.Task(f"t{n}", f"task {n}", run)

    out = io.StringIO()
    assert pool.run("test", [task(n) for n in range(6)], jobs=3, stream=out) == [
        n * n for n in range(6)
    ]
    assert most == 3
    text = out.getvalue()
    assert (
        "test: 6 boots, 3 at a time" in text
        and "done 6/6" in text
        and "    t2: working on 2" in text
    )
    assert "ETA" in text.split("done 1/6")[1].splitlines()[0], "an estimate once a boot is done"


def test_a_failed_task_stops_the_others_and_its_error_is_raised() -> None:
    started: list[str] = []
    stopped: list[str] = []

    def slow(ctx: pool.Context) -> str:
        started.append(ctx.label)
        if ctx.cancel.wait(5):
            stopped.append(ctx.label)
            raise TandemError("stopped")
        return "finished"

    def fail(ctx: pool.Context) -> str:
        started.append(ctx.label)
        time.sleep(0.1)
        raise TandemError("boot b failed")

    tasks = [pool.Task("a", "", slow), pool.Task("b", "", fail)]
    tasks += [pool.Task(f"later{n}", "", slow) for n in range(3)]
    with pytest.raises(TandemError, match="boot b failed"):
        pool.run("test", tasks, jobs=2, stream=io.StringIO())
    # "a" was stopped, not waited for: left alone it returns after 5 s
    # without a word in `stopped` (no bound on the host's time, which moves
    # with its load).
    assert stopped == ["a"] and not any(s.startswith("later") for s in started)


def test_labels_name_one_boot_each() -> None:
    task = pool.Task("same", "", lambda ctx: 1)
    with pytest.raises(TandemError, match="the same label: same"):
        pool.run("test", [task, task], jobs=1)


def test_host_timing_runs_one_boot_at_a_time() -> None:
    percore, host = Timing("percore"), Timing("host")
    many = [percore, Timing("virtual")] * 64
    assert pool.choose_jobs(None, many, "x") == pool.host_cores()
    assert pool.choose_jobs(3, many, "x") == 3
    assert pool.choose_jobs(3, [percore] * 2, "x") == 2, "no more than there are boots"
    assert pool.choose_jobs(None, [percore, host], "ctxsw") == 1
    assert pool.choose_jobs(1, [host], "ctxsw") == 1
    with pytest.raises(TandemError, match="--jobs 2: ctxsw boots in host timing"):
        pool.choose_jobs(2, [percore, host], "ctxsw")
    with pytest.raises(TandemError, match="at least 1"):
        pool.choose_jobs(0, [percore], "x")
    assert pool.clock(59) == "0:59" and pool.clock(3725) == "1:02:05"


def test_boots_that_time_the_host_run_one_at_a_time_in_any_timing() -> None:
    """`bench boot` measures the host's wall time: boots side by side
    would lengthen each other even where guest time is instructions.
    `fidelity`'s cost is some of its figures: one at a time by default,
    side by side when asked (then its cost is not judged)."""
    percore = [Timing("percore")] * 4
    every = pool.HostTime.ALL
    assert pool.choose_jobs(None, percore, "boot's", host_time=every) == 1
    assert pool.choose_jobs(1, percore, "boot's", host_time=every) == 1
    with pytest.raises(TandemError, match="--jobs 3: boot's boots measure the host's wall time"):
        pool.choose_jobs(3, percore, "boot's", host_time=every)
    some = pool.HostTime.SOME
    assert pool.choose_jobs(None, percore, "fidelity's", host_time=some) == 1
    assert pool.choose_jobs(3, percore, "fidelity's", host_time=some) == 3
    assert pool.choose_jobs(9, percore, "fidelity's", host_time=some) == 4
