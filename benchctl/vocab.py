"""The words benchctl writes and reads, each defined here once: how a pass ended (Status), why its sampling
stopped (Stop), the passes, the devices, the dtypes, the verdicts of `compare` and `bisect`, where a run
stands, and the choices of the options every layer passes on (executor, allocator, TF32).

This module is the ground floor: every layer may import it, and it imports nothing of benchctl's (nor
torch), so reading a run stays fast. The columns a row holds live one floor up, in results/schema.py.

The enums are StrEnums: rows, JSON and parquet files hold the plain string, and a member equals its string.
The tuples beside them hold plain strings, for click's choices and for anything written out.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """How a cell's pass ended."""

    OK = "ok"
    UNAVAILABLE = "unavailable"  # cannot run here: no device, no extension, a failed build
    INCORRECT = "incorrect"  # ran, but failed the correctness gate
    OOM = "oom"
    CRASHED = "crashed"  # the worker died (segfault, abort, exit)
    TIMEOUT = "timeout"
    ERROR = "error"  # the implementation raised
    SKIPPED = "skipped"  # not run: a smaller size of its series ran out of memory
    LOST = "lost"  # its node died and the retry failed too (ray executor); the message names the error
    BELOW_FLOOR = "below_floor"  # timed faster than its bytes or FLOPs can go on this machine: work skipped, or missed


# A cell that ran and went wrong (not one that could not, or was not, run).
BROKEN = (Status.INCORRECT, Status.OOM, Status.CRASHED, Status.TIMEOUT, Status.ERROR, Status.LOST, Status.BELOW_FLOOR)
# Every status of a row without a time.
FAILED = tuple(s for s in Status if s is not Status.OK)


class RunState(StrEnum):
    """Where a run folder's sweep stands, as its metadata file says (and, for `cut off`, as a reader
    finds it: the file says running, but the process writing it is gone)."""

    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"  # Ctrl-C or SIGTERM; every finished cell is kept
    FAILED = "failed"  # the metadata gives the reason
    CUT_OFF = "cut off"  # its writer died without a word (kill -9, power loss); finished cells are kept


class Stop(StrEnum):
    """Why a pass's sampling ended (measure/timing.py)."""

    CONVERGED = "converged"  # the median's confidence interval reached the target
    MAX_TIME = "max_time"  # time ran out first: the row is noisy unless the interval is within the target
    MAX_SAMPLES = "max_samples"
    MIN_TIME = "min_time"  # fixed rule (--ci-target 0): the minimum time was sampled
    STABLE = "stable"  # fixed rule: the running median stopped moving
    DISTURBED = "disturbed"  # too few samples the machine left alone (measure/interference.py) to judge


class TimingMode(StrEnum):
    """How a pass's calls were timed."""

    EAGER = "eager"  # each call as the program makes it (on a GPU: launches included)
    CUDA_GRAPH = "cuda_graph"  # replays of the call captured in a CUDA graph (run --cuda-graph)


class Pass(StrEnum):
    FORWARD = "forward"
    BACKWARD = "backward"
    FORWARD_BACKWARD = "forward_backward"


PASSES: tuple[str, ...] = tuple(p.value for p in Pass)
PASS_LABELS = {Pass.FORWARD: "forward", Pass.BACKWARD: "backward", Pass.FORWARD_BACKWARD: "forward+backward"}


class Device(StrEnum):
    """The devices a cell runs on."""

    CPU = "cpu"
    CUDA = "cuda"


DEVICES: tuple[str, ...] = tuple(d.value for d in Device)
# The order devices and passes are shown in (tables, charts, answers): CPU before CUDA, forward first.
SHOWN_ORDER: dict[str, int] = {name: i for i, name in enumerate(DEVICES + PASSES)}
DEVICE_ALIASES = {"gpu": Device.CUDA.value, "cuda": Device.CUDA.value, "cpu": Device.CPU.value}  # what a user may type
DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16")  # the torch dtypes a cell can name
TF32_PEAK = "tf32"  # the calibrated matmul rate of float32 with TF32 allowed, beside the dtypes' own


class Verdict(StrEnum):
    """A cell's change between two runs (`compare`, `history`), in the order a table lists them: what
    needs attention first."""

    SLOWER = "slower"
    BROKEN = "broken"  # timed fine in the base run, ends in one of BROKEN in the new one
    FASTER = "faster"
    FIXED = "fixed"  # the other way round
    UNSURE = "unsure"  # the samples cannot tell, or the machine or the spread between processes cast doubt
    SAME = "same"
    NOT_TIMED = "not timed"  # in both runs, timed in neither
    ONLY_IN_BASE = "only in base"
    ONLY_IN_NEW = "only in new"


class CommitVerdict(StrEnum):
    """A commit judged by `bisect` against its good commit."""

    GOOD = "good"
    BAD = "bad"  # some cell slower, or broken
    UNSURE = "unsure"  # measured twice and still undecided: skipped, never guessed
    FAILED = "failed"  # the cell could not be measured at this commit


class Executor(StrEnum):
    """run --executor: where the cells run."""

    LOCAL = "local"  # one cell at a time, here
    POOL = "pool"  # a worker per GPU (or CPU slot) on this machine
    RAY = "ray"  # a Ray cluster


EXECUTORS: tuple[str, ...] = tuple(e.value for e in Executor)


class Allocator(StrEnum):
    """run --allocator: the worker's malloc (machine/allocator.py)."""

    SYSTEM = "system"
    JEMALLOC = "jemalloc"
    TCMALLOC = "tcmalloc"


ALLOCATORS: tuple[str, ...] = tuple(a.value for a in Allocator)

# run --pair-with reference: each operator's reference implementation (Operator.reference), not one named
PAIR_REFERENCE = "reference"
# run's default: the same, on CPU cells only, and only where the reference runs too (never an error); the
# speedups of CPU cells moved between two runs by a median 4.8% against 12-22% unpaired (docs/measuring.md)
PAIR_REFERENCE_ON_CPU = "reference-on-cpu"
PAIR_NONE = "none"  # run --pair-with none: every cell timed alone


class Tf32(StrEnum):
    """--tf32: torch's setting, allowed, or forbidden."""

    DEFAULT = "default"
    ON = "on"
    OFF = "off"


TF32_MODES: dict[str, bool | None] = {Tf32.DEFAULT.value: None, Tf32.ON.value: True, Tf32.OFF.value: False}
