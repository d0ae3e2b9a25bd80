"""What each `domains` boot runs: the phases (load, loaded cores) and the
guest script that measures them all in one boot of one environment."""

from __future__ import annotations

from tandem.errors import TandemError
from tandem.exp.domains.spec import (
    INFO_CORES,
    MEASURED_CORE,
    MEMORY_LOAD_KINDS,
    PERIOD_US,
    Env,
)
from tandem.exp.scenario import Scenario
from tandem.instruments.measure import CYCLICTEST_SERIES_MAX, script_header
from tandem.platform.abi import constants
from tandem.platform.board import Board

# The measuring partition hands the loading one its commands over the
# shared region's mailbox page (abi/src/shm.rs), as 32-bit words: a
# sequence number (written last), the load (0 stop, 1 memory, 2 scheduling,
# 3 done), how many workers (memory: one on each of cores 0..n-1); the
# loading partition writes the sequence number it carried out back.
MAILBOX_WORDS = {"seq": 0, "kind": 1, "workers": 2, "ack": 3}
LOAD_CODES = {"stop": 0, "memory": 1, "scheduling": 2, "done": 3}


def mailbox(board: Board) -> int:
    """The mailbox page's physical address on `board`."""
    return board.shared.base + constants()["SHM_PARTITION_MAILBOX_OFFSET"]


def _word(board: Board, name: str) -> str:
    return f"{mailbox(board) + 4 * MAILBOX_WORDS[name]:#x}"


def remote_functions(board: Board) -> str:
    """Shell for the measuring partition: `remote KIND WORKERS` starts a load
    in the other partition (or stops it, or ends it) and waits until it has."""
    return f"""
SEQ=0
remote() {{
	SEQ=$((SEQ + 1))
	case $1 in
	stop) kind={LOAD_CODES["stop"]} ;;
	memory) kind={LOAD_CODES["memory"]} ;;
	scheduling) kind={LOAD_CODES["scheduling"]} ;;
	done) kind={LOAD_CODES["done"]} ;;
	*) fail "unknown remote load $1" ;;
	esac
	devmem {_word(board, "kind")} 32 "$kind"
	devmem {_word(board, "workers")} 32 "$2"
	devmem {_word(board, "seq")} 32 "$SEQ"
	[ "$1" = done ] && return 0
	n=0
	while [ $(($(devmem {_word(board, "ack")} 32))) -ne "$SEQ" ]; do
		n=$((n + 1))
		[ "$n" -gt 3000 ] && fail "the other partition did not start load $1"
		usleep 10000
	done
}}
"""


def memory_kind(s: Scenario) -> str:
    """What load_start runs on a memory-loaded core (`memory_load`)."""
    return MEMORY_LOAD_KINDS[s.text("memory_load")]


def load_agent_script(s: Scenario) -> str:
    """The loading partition's script: start and stop loads as the measuring
    partition asks over the mailbox, until it says it is done."""
    board = s.board
    header = script_header(
        PERIOD_US,
        s.text("memory_bytes"),
        s.integer("scheduling_threads"),
        "0",
        s.integer("settle_ms"),
    )
    return (
        header
        + f"""
devmem {_word(board, "ack")} 32 0
seen=0
while true; do
	seq=$(($(devmem {_word(board, "seq")} 32)))
	if [ "$seq" -eq "$seen" ]; then
		usleep 10000
		continue
	fi
	seen=$seq
	kind=$(($(devmem {_word(board, "kind")} 32)))
	workers=$(($(devmem {_word(board, "workers")} 32)))
	case $kind in
	{LOAD_CODES["stop"]}) load_stop ;;
	{LOAD_CODES["memory"]})
		core=0
		while [ "$core" -lt "$workers" ]; do
			load_start {memory_kind(s)} 1 "$core"
			core=$((core + 1))
		done ;;
	{LOAD_CODES["scheduling"]}) load_start scheduling 1 0-{INFO_CORES - 1} ;;
	{LOAD_CODES["done"]}) load_stop; break ;;
	esac
	running=$(pidof stress-ng tandem-membench | wc -w)
	echo "load agent: command $seq (load $kind x$workers): $running load processes"
	devmem {_word(board, "ack")} 32 "$seq"
done
echo "load agent: done after $seen commands"
"""
    )


# With a memory model, each RTOS phase's interval is a window of the
# model's counters on every core (memmodel.json's `windows`, in phase
# order): what the RTOS's core read from DRAM and waited, and what the
# loaded cores' lanes held meanwhile.
WINDOW_HOOKS = """cell_before() { tandem-membench window open; }
cell_after() { tandem-membench window close; }"""


def windowed(env: Env, s: Scenario) -> bool:
    """Whether `env`'s phases are windows of the memory model's counters:
    asked for (`windows`, which needs a model), where the RTOS measures (its
    interval is the script's)."""
    if not s.values["windows"]:
        return False
    if s.text("memmodel") == "none":
        raise TandemError(
            f"{s.path}: windows = true counts the memory model's windows: it needs a model "
            "(--set memmodel=PROFILE)"
        )
    return env.instrument == "rtos" and env.measure_in is None


def phases(s: Scenario) -> list[tuple[str, int]]:
    """(load, loaded cores) measured in each boot, in order."""
    loads = s.texts("loads")
    sweep = set(s.integers("loaded_cores"))
    out: list[tuple[str, int]] = []
    if "none" in loads or 0 in sweep:
        out.append(("none", 0))
    memory = {k for k in sweep if k > 0} | ({INFO_CORES} if "memory" in loads else set())
    out += [("memory", k) for k in sorted(memory)]
    if "scheduling" in loads:
        out.append(("scheduling", INFO_CORES))
    return out


def phase_id(load: str, k: int) -> str:
    return f"{load}-{k}"


def guest_script(env: Env, s: Scenario) -> str:
    """The guest script for one environment: every phase in one boot (with
    partitions: the measuring partition's; `load_agent_script` is the
    other's)."""
    _check_series_fits(s)
    if env.measure_in is not None:
        return _partitioned_script(s)
    lines = [
        script_header(
            PERIOD_US,
            s.text("memory_bytes"),
            s.integer("scheduling_threads"),
            "0",
            s.integer("settle_ms"),
            cyclictest_ns=s.flag("linux_latency_ns"),
        )
    ]
    if env.isolate:
        lines.append(f"isolate_core {MEASURED_CORE}")
    if windowed(env, s):
        lines.append(WINDOW_HOOKS)
    samples = s.integer("samples")
    for load, k in phases(s):
        if load == "memory":
            kind = memory_kind(s)
            if env.pin_load:
                lines += [f"load_start {kind} 1 {core}" for core in range(k)]
            else:
                lines.append(f"load_start {kind} {k} any")
        elif load == "scheduling":
            cpus = f"0-{INFO_CORES - 1}" if env.pin_load else "any"
            lines.append(f"load_start scheduling 1 {cpus}")
        pid = phase_id(load, k)
        if env.instrument == "rtos":
            lines.append(f"measure_rtos {pid} {samples} {MEASURED_CORE}")
        else:
            where = str(MEASURED_CORE) if env.isolate else "any"
            isolated = "yes" if env.isolate else "no"
            lines.append(f"measure_cyclictest {pid} {samples} {where} {isolated}")
    return "\n".join(lines) + "\n"


def _check_series_fits(s: Scenario) -> None:
    """In ns cyclictest keeps every sample, and no more than it can."""
    if s.flag("linux_latency_ns") and s.integer("samples") > CYCLICTEST_SERIES_MAX:
        raise TandemError(
            f"{s.path}: samples = {s.integer('samples')} with linux_latency_ns: cyclictest "
            f"keeps at most {CYCLICTEST_SERIES_MAX} samples in ns (or linux_latency_ns = false)"
        )


def _partitioned_script(s: Scenario) -> str:
    """The measuring partition's script (DualUnix): its one core is core 3;
    each phase asks the other partition for its load, measures, and stops
    the load before reporting (as the other environments do)."""
    lines = [
        script_header(
            PERIOD_US,
            s.text("memory_bytes"),
            s.integer("scheduling_threads"),
            "0",
            s.integer("settle_ms"),
            cyclictest_ns=s.flag("linux_latency_ns"),
        ),
        remote_functions(s.board),
        # The loads' stop before the results are worked through is the
        # other partition's here.
        "load_stop() { remote stop 0; }",
    ]
    samples = s.integer("samples")
    for load, k in phases(s):
        if load == "memory":
            lines.append(f"remote memory {k}")
        elif load == "scheduling":
            lines.append("remote scheduling 1")
        lines.append(f"measure_cyclictest {phase_id(load, k)} {samples} any no")
    lines.append("remote done 0")
    return "\n".join(lines) + "\n"
