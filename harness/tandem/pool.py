"""Boots side by side (`--jobs N`): each task is one boot, run in a host
thread, at most N at once, with one line per start and per end on stderr
(boots done / total, the running ones, an estimate of the time left).

Threads suffice: QEMU is a process of its own, and a task's thread only
writes a boot's inputs, reads its console and copies files. In per-core and
virtual timing a boot's guest time is counted in instructions, so boots
side by side measure exactly what they measure one after another, only the
host's wall time changes; in host timing the guest's time is the host's,
and other boots would change it: `choose_jobs` refuses more than one.

A task that fails stops the others (their QEMU is killed through
`Context.cancel`, which `run_exec` watches) and its error is raised; so is
Ctrl-C (or SIGTERM) in the main thread. Tasks not started yet never start.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TextIO, TypeVar

from tandem.errors import TandemError
from tandem.platform.timing import Timing

T = TypeVar("T")


class HostTime(Enum):
    """How much of a boot's figures are the host's wall time, which boots
    side by side would lengthen (they share the host's cores, caches and
    memory) whatever their timing mode."""

    # None: guest time (or the host's real time in host timing, which
    # choose_jobs knows from the timing).
    NONE = "none"
    # Some: one boot at a time unless --jobs says otherwise; side by side,
    # those figures are recorded but not judged (`fidelity`'s cost (e)).
    SOME = "some"
    # All: one boot at a time, and more is refused (`boot`, `restart`).
    ALL = "all"


def host_cores() -> int:
    """The host cores this process may run on (what `--jobs` defaults to)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def choose_jobs(
    requested: int | None,
    timings: Sequence[Timing],
    what: str,
    host_time: HostTime = HostTime.NONE,
) -> int:
    """How many of `what`'s boots (one timing each) to run at once:
    `requested`, or one per host core, if every boot's timing counts guest
    time in instructions; one in host timing, where a boot's figures are
    the host's real time, and one when the figures are the host's wall time
    whatever the timing (`host_time` ALL: `boot`, whose boots side by side
    would share the host's cores; SOME: one unless `requested` says). More
    than one asked for where one is the rule is an error saying so. Never
    more than there are boots."""
    if requested is not None and requested < 1:
        raise TandemError(f"--jobs must be at least 1, got {requested}")
    if host_time is HostTime.ALL:
        if requested is not None and requested > 1:
            raise TandemError(
                f"--jobs {requested}: {what} boots measure the host's wall time, which "
                "boots side by side would lengthen (they share the host's cores, caches and "
                "memory), whatever their timing mode; run it with --jobs 1 (its default)"
            )
        return 1
    real_time = sorted({t.mode for t in timings if not t.deterministic})
    if real_time:
        if requested is not None and requested > 1:
            raise TandemError(
                f"--jobs {requested}: {what} boots in {', '.join(real_time)} timing, whose "
                "figures are the host's real time and would change with other boots running "
                "beside them; run it with --jobs 1 (or in per-core or virtual timing, which "
                "count guest time in instructions)"
            )
        return 1
    if requested is None:
        requested = 1 if host_time is HostTime.SOME else host_cores()
    return max(1, min(requested, len(timings)))


@dataclass(frozen=True)
class Context:
    """What a running task gets: its label, the pool's size, a stop signal
    to pass to `run_exec`, and a way to print a note under its label."""

    label: str
    jobs: int
    cancel: threading.Event
    note: Callable[[str], None]


@dataclass(frozen=True)
class Task(Generic[T]):
    """One boot: a label (unique in the pool), what it is in words, and what
    runs it."""

    label: str
    about: str
    run: Callable[[Context], T]


def clock(seconds: float) -> str:
    """A duration as m:ss, or h:mm:ss from an hour."""
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


class _Progress:
    """The pool's lines on stderr, one writer at a time."""

    def __init__(self, name: str, total: int, jobs: int, stream: TextIO) -> None:
        self.name = name
        self.total = total
        self.jobs = jobs
        self.stream = stream
        self.start = time.monotonic()
        self.started = 0
        self.done = 0
        self.lock = threading.Lock()

    def _line(self, text: str) -> None:
        # Called with the lock held.
        print(f"[{clock(time.monotonic() - self.start)}] {text}", file=self.stream, flush=True)

    def begin(self, label: str, about: str) -> None:
        with self.lock:
            self.started += 1
            self._line(f"{self.name}: start {self.started}/{self.total} {label}: {about}")

    def end(self, label: str, seconds: float) -> None:
        with self.lock:
            self.done += 1
            elapsed = time.monotonic() - self.start
            left = self.total - self.done
            running = self.started - self.done
            # Boots finished per wall second so far, whatever ran at once.
            eta = f", ETA {clock(elapsed / self.done * left)}" if left else ""
            self._line(
                f"{self.name}: done {self.done}/{self.total} ({label}, {clock(seconds)}); "
                f"{running} running{eta}"
            )

    def note(self, label: str, text: str) -> None:
        self.say(f"    {label}: {text}")

    def say(self, text: str) -> None:
        with self.lock:
            self._line(text)


def run(name: str, tasks: Sequence[Task[T]], jobs: int, stream: TextIO | None = None) -> list[T]:
    """Runs `tasks`, at most `jobs` at once, in their order; returns their
    results in that order."""
    labels = [t.label for t in tasks]
    if len(set(labels)) != len(labels):
        twice = sorted({x for x in labels if labels.count(x) > 1})
        raise TandemError(f"{name}: boots with the same label: {', '.join(twice)}")
    if not tasks:
        return []
    jobs = max(1, min(jobs, len(tasks)))
    progress = _Progress(name, len(tasks), jobs, stream or sys.stderr)
    progress.say(f"{name}: {len(tasks)} boots, {jobs} at a time")
    cancel = threading.Event()

    def one(task: Task[T]) -> T:
        if cancel.is_set():
            raise TandemError(f"{task.label}: not started (stopped)")
        progress.begin(task.label, task.about)
        started = time.monotonic()
        ctx = Context(task.label, jobs, cancel, lambda text: progress.note(task.label, text))
        try:
            result = task.run(ctx)
        except BaseException:
            # Set here, not only by the main thread once it hears: this
            # thread must not start the next task meanwhile.
            cancel.set()
            raise
        progress.end(task.label, time.monotonic() - started)
        return result

    results: dict[int, T] = {}
    # Tasks start in submission order (the executor's queue is FIFO).
    executor = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix=f"{name}-boot")
    try:
        futures: dict[Future[T], int] = {executor.submit(one, t): i for i, t in enumerate(tasks)}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
    except BaseException:
        # One boot failed, or Ctrl-C: stop the running ones (their QEMU is
        # killed), start no other, and report the first error.
        cancel.set()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
    return [results[i] for i in range(len(tasks))]
