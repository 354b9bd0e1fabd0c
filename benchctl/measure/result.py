"""A pass's result: one typed object per cell and pass, whose fields are the row's columns the measuring code
fills (results/schema.py names every column; a field it does not know is an error when this module is
imported, and a column it does not know is an error where a result is made or changed, not where parquet
writes it).

`to_row()` gives the row as storage and the worker's channel carry it: the columns given, each once,
explicit nulls included. `merge()` pools one pass's rounds (run --rounds, --processes, a re-measurement)
into one result, its statistics and rates recomputed from the pooled samples (pooling.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping, Sequence

from benchctl.measure import pooling
from benchctl.measure.stats import summarize
from benchctl.results.schema import COLUMNS, clean_samples
from benchctl.vocab import Status

PROCESS = "process"  # not a column: which of run --processes' workers measured it, until the rounds are pooled
_FIELD_OF = {"pass": "pass_"}  # columns whose name Python keeps for itself
_COLUMN_OF = {f: c for c, f in _FIELD_OF.items()}


class UnknownColumn(ValueError):
    """A result given a column results/schema.py does not list (a misspelt name)."""


@dataclass(frozen=True)
class PassResult:
    # what the cell is (execute.base_result)
    op: str | None = None
    target: str | None = None
    impl: str | None = None
    device: str | None = None
    dtype: str | None = None
    params: str | None = None
    axis: str | None = None
    axis_value: float | None = None
    batch_size: int | None = None
    pass_: str | None = None
    # where and how it ran (the environment stamped later does not override these)
    host: str | None = None
    torch_version: str | None = None
    cuda_version: str | None = None
    cpu_name: str | None = None
    gpu_name: str | None = None
    gpu_driver: str | None = None
    git_sha: str | None = None
    node_id: str | None = None
    threads: int | None = None
    allocator: str | None = None
    process: int | None = None
    # how it ended
    status: str | None = None
    message: str | None = None
    # the samples and their statistics (stats.summarize)
    n: int | None = None
    median_s: float | None = None
    iqr_s: float | None = None
    mean_s: float | None = None
    std_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    ci_lo_s: float | None = None
    ci_hi_s: float | None = None
    samples_s: list[float] | None = None
    disturbed: list[bool] | None = None
    disturbed_share: float | None = None
    wait_s: float | None = None
    noisy: bool | None = None
    stop: str | None = None
    timing_mode: str | None = None
    wall_s: float | None = None
    # measured again (sweep/recheck.py, sweep/driver.py)
    rechecked: bool | None = None
    remeasured: int | None = None
    # pooled from rounds and processes (merge)
    rounds: int | None = None
    round_spread: float | None = None
    round_medians_s: list[float] | None = None
    mode_fast_s: float | None = None
    mode_slow_s: float | None = None
    processes: int | None = None
    process_medians_s: list[float] | None = None
    process_spread: float | None = None
    # timed in alternation with a partner (paired.py)
    paired_with: str | None = None
    partner_samples_s: list[float] | None = None
    paired_speedup: float | None = None
    paired_ci_lo: float | None = None
    paired_ci_hi: float | None = None
    # the first call, and what torch.compile compiled (ops/compile_watch.py)
    compile_s: float | None = None
    best_config: str | None = None
    recompiles: int | None = None
    recompiles_total: int | None = None
    graph_breaks: int | None = None
    graph_break_reason: str | None = None
    dynamic_shapes: bool | None = None
    # the machine around the pass (trust.py, machine/gpu_clocks.py)
    peak_mem_bytes: float | None = None
    page_faults: float | None = None
    sys_s: float | None = None
    host_s: float | None = None
    mem_gbps: float | None = None
    canary_s: float | None = None
    canary_ratio: float | None = None
    sm_clock_mhz: float | None = None
    gpu_temp_c: float | None = None
    throttled: bool | None = None
    throttle_reasons: str | None = None
    # its work and rates (rates.py)
    flops: float | None = None
    bytes: float | None = None
    flops_source: str | None = None
    gflops: float | None = None
    gbps: float | None = None
    pct_of_peak: float | None = None
    peak_level: str | None = None
    # the correctness gate (execute._gate)
    correct: bool | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    tolerance: float | None = None
    check_params: str | None = None
    # the columns given (explicit nulls included): the row has these; made directly, the fields set
    given: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.given:
            object.__setattr__(self, "given", frozenset(f for f in _FIELDS if getattr(self, f) is not None))

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> PassResult:
        """The result a row says (its columns by name; an unknown one raises UnknownColumn)."""
        named = _fields_of(row)
        return cls(**named, given=frozenset(named))

    def with_(self, **columns: Any) -> PassResult:
        """This result with `columns` (by column or field name) set; an unknown one raises UnknownColumn."""
        named = _fields_of(columns)
        return replace(self, **named, given=self.given | frozenset(named)) if named else self

    def without(self, *names: str) -> PassResult:
        """This result without `names` (by column or field name): its row does not have them."""
        dropped = _fields_of(dict.fromkeys(names))
        return replace(self, **dropped, given=self.given - frozenset(dropped))

    def keeping(self, other: PassResult, names: Sequence[str]) -> PassResult:
        """This result with `other`'s values of `names`, those `other` has (a measurement taken again keeps
        the first one's gate and what its first call compiled)."""
        theirs = other.to_row()
        return self.with_(**{k: theirs[k] for k in names if k in theirs})

    def to_row(self) -> dict[str, Any]:
        """The row: each column given, by its schema name."""
        return {_COLUMN_OF.get(f, f): getattr(self, f) for f in _FIELDS if f in self.given}

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    def clean(self) -> list[float]:
        """The samples its worker did not set aside (all of them where none were watched)."""
        return clean_samples(self.samples_s or [], self.disturbed)

    def statistics(self) -> dict[str, float]:
        """The statistics its clean samples give (the columns n ... ci_hi_s)."""
        return summarize(self.clean())

    @staticmethod
    def merge(results: Sequence[PassResult]) -> PassResult:
        """One pass's results of several rounds (in round order) as one: all ok, their samples pooled and
        the statistics and rates recomputed (pooling.py); otherwise the first that was not ok. One
        round is the result as measured. The worker each came from is left out; the rounds are counted."""
        failed = next((r for r in results if not r.ok), None)
        if failed is not None or len(results) == 1:
            return (failed or results[0]).without(PROCESS).with_(rounds=len(results))
        return pooling.pooled(results).without(PROCESS)


_FIELDS = tuple(f.name for f in fields(PassResult) if f.name != "given")
_UNKNOWN = {_COLUMN_OF.get(f, f) for f in _FIELDS} - set(COLUMNS) - {PROCESS}
if _UNKNOWN:
    raise UnknownColumn(f"PassResult has fields results/schema.py does not list: {', '.join(sorted(_UNKNOWN))}")
_KNOWN = frozenset(_FIELDS)


def _fields_of(columns: Mapping[str, Any]) -> dict[str, Any]:
    """`columns` keyed by field name; a name that is neither a field nor its column raises UnknownColumn."""
    named = {_FIELD_OF.get(k, k): v for k, v in columns.items()}
    unknown = [k for k in named if k not in _KNOWN]
    if unknown:
        raise UnknownColumn(f"unknown column(s) {', '.join(map(repr, unknown))}: results/schema.py's COLUMNS "
                            "does not list them")
    return named
