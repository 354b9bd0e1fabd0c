"""What a result row is: its columns and their types and the environment facts, each defined here once;
every other module takes them from here. The words a row holds (statuses, passes, stops, devices) are
benchctl/vocab.py's.

The parquet files are the contract with users and old runs: a column is only ever added (nullable), and a
change that breaks a reader bumps SCHEMA_VERSION, while loaders keep reading older versions.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pyarrow as pa

from benchctl import vocab

SCHEMA_VERSION = 1
# A probe of the processor's speed read more than this share slow (an SM clock under its maximum, the canary
# around a calibration step): a clock that is read, not timed, or a correction, not a mark.
CANARY_SLOW = 0.05
# A canary (machine/canary.py) more than this share over its calibrated time, or two rows' canaries this far
# apart: the VM in a slow phase, another machine, and the pass marked `slow` (docs/measuring.md, "Slow phases":
# at speed, within 15%; in a slow phase, 1.34-1.54x). At speed a quiet run's canaries read 1.00-1.19x, 77% of
# them over 1.05: a mark at 5% marked most passes of a quiet run, and their re-measurements read as slow.
SLOW_PHASE = 0.15
# A canary under this ratio to its calibrated time: the machine ran far faster than when it was calibrated, so the
# calibration ran in a slow phase and no pass timed as slow as it can be marked slow.
FAST_CANARY = 1 / (1 + SLOW_PHASE)
# A measurement whose time or speedup follows the memory probe across its folder's runs (analysis/follows.py) is
# held only against earlier runs whose memory probe read within this share of its own: the canary's state does not
# say the memory's (on the 2-core VM the probe read 28-84 GB/s a pass, fastest while the canary ran slow).
MEMORY_NEAR = 0.15
# ... tried at a looser false discovery rate than `history` names followers at (follows.FALSE_DISCOVERY): holding a
# pass to its memory state on weak evidence costs an arrow, an arrow the memory drew misleads. Over fifteen quick
# sweeps of one folder, the `slow↑`/`slow↓` arrows whose memory probe read over 15% outside that of the runs at
# speed, the way the arrow points, fell from 35 of 159 (the canary alone) to 21 of 141 at 5% and 11 of 125 at 20%
# (benchmarks/memory_state_bench.py).
MEMORY_HOLD = 0.2
SPEEDUP_LIMIT = 50.0  # a pass this many times faster than its reference is re-checked (sweep/recheck.py)
# A CPU pass whose calls kept more than its torch threads x (1 + this) cores busy ran threads of its own
# (measure/cores.py): torch's own work keeps at most its threads busy.
CORES_OVER = 0.25
# Cores other processes kept busy (machine/load.py) from which a CPU measurement shares the machine with them:
# a pass timed beside that much (`other_cores`) is `busy`, a run with it through a stretch says so
BUSY_WARN_CORES = 0.5
# A GPU call whose host side (Python, dispatch, launches) took at least this share of its median is marked
# "host": the GPU spent the sample waiting for work, so a faster kernel would not show, and a neighbour that
# slows the host slows the sample.
HOST_BOUND = 0.8

# Facts of the machine and software stamped on every row (machine/facts.py gathers them), with the
# label the report's environment table gives each.
ENV_FIELDS = {"host": "host", "node_id": "node", "torch_version": "torch", "cuda_version": "CUDA",
              "cpu_name": "CPU", "gpu_name": "GPU", "gpu_driver": "driver", "threads": "threads",
              "allocator": "allocator", "git_sha": "git"}

Row = dict[str, Any]  # a row as storage writes it and the worker's channel carries it: column -> value
Rows = list[Row]

# The columns that name a cell (ops/cells.py's Cell.identity); a row is one cell's one pass.
CELL_COLUMNS = ("op", "target", "impl", "device", "dtype", "params")
# What a parquet file must hold to be results: which cell and pass each row is, and how it ended.
RESULT_KEYS = (*CELL_COLUMNS, "pass", "status")

# Column -> arrow type. Every row carries all of them (missing values are null).
COLUMNS: dict[str, pa.DataType] = {
    "schema_version": pa.int32(),
    "run_id": pa.string(),
    "timestamp": pa.string(),
    "git_sha": pa.string(),  # benchctl's own commit
    # The commit of the repository the measured code comes from (ops/provenance.py): the --ops-dir
    # folder's for a user's operator, benchctl's for a built-in one. `history` orders runs by it.
    "code_sha": pa.string(),  # full hash
    "code_dirty": pa.bool_(),  # the repository had uncommitted changes to tracked files
    "code_repo": pa.string(),  # the repository's top folder
    "code_time": pa.string(),  # the commit's date (ISO 8601, committer)
    # A digest of the code the pass timed (ops/digest.py): the implementation's own functions, kernels and
    # extension sources, and its target's input factory. Equal in two runs: none of that code changed.
    "impl_code": pa.string(),
    "host": pa.string(),
    "torch_version": pa.string(),
    "cuda_version": pa.string(),
    "cpu_name": pa.string(),
    "gpu_name": pa.string(),
    "gpu_driver": pa.string(),
    "node_id": pa.string(),  # the machine that ran the cell: Ray's node id, else the host
    "threads": pa.int32(),
    "allocator": pa.string(),  # the memory allocator the worker ran under: system, jemalloc, tcmalloc
    "op": pa.string(),
    "target": pa.string(),
    "impl": pa.string(),
    "device": pa.string(),
    "dtype": pa.string(),
    "params": pa.string(),  # JSON of the operator's params for this cell
    "axis": pa.string(),  # the param the operator sweeps on a chart's x axis
    "axis_value": pa.float64(),
    "batch_size": pa.int64(),
    "pass": pa.string(),  # a vocab.Pass
    "status": pa.string(),  # a vocab.Status
    "message": pa.string(),
    "n": pa.int64(),
    "median_s": pa.float64(),
    "iqr_s": pa.float64(),
    "mean_s": pa.float64(),
    "std_s": pa.float64(),
    "min_s": pa.float64(),
    "max_s": pa.float64(),
    "samples_s": pa.list_(pa.float64()),
    "disturbed": pa.list_(pa.bool_()),  # per sample: set aside, its threads waited for a CPU (CPU clock)
    "disturbed_share": pa.float64(),  # the share of samples set aside; the statistics are the others'
    # per sample: the audit's call, not the implementation's steady state (data never given to it before, its
    # control, or one whose inputs the harness had just made or copied: caches cold): kept, out of the statistics
    "probe": pa.list_(pa.bool_()),
    "wait_s": pa.float64(),  # median run-queue delay per timed call, all the process's threads (CPU clock)
    "ci_lo_s": pa.float64(),  # the 95% confidence interval of median_s (order statistics)
    "ci_hi_s": pa.float64(),
    "noisy": pa.bool_(),  # the median did not settle: its interval is wider than +-1% of it
    "stop": pa.string(),  # a vocab.Stop: why sampling ended (converged, max_time, ...)
    "timing_mode": pa.string(),  # a vocab.TimingMode: eager, or cuda_graph
    "flush_l2": pa.bool_(),  # caches flushed before each call (run --flush-caches; GPU: L2): cold-cache times
    # measured again strictly: below its floor, or far faster than its reference (sweep/recheck.py)
    "rechecked": pa.bool_(),
    "remeasured": pa.int32(),  # times the cell was measured again late in the sweep because it was noisy
    "wall_s": pa.float64(),  # wall clock the pass's warm-up and sampling took, untimed setup included
    "rounds": pa.int32(),  # interleaved rounds the samples were pooled from (run --rounds)
    "round_spread": pa.float64(),  # slowest round's median / fastest round's - 1
    "round_medians_s": pa.list_(pa.float64()),  # each round's median in round order; NaN: all set aside
    "mode_fast_s": pa.float64(),  # rounds that disagree (spread over MODES_APART): the fast mode's median
    "mode_slow_s": pa.float64(),  # ... and the slow mode's; median_s is then the mode of most rounds
    "mode_aside": pa.list_(pa.bool_()),  # ... per sample (beside samples_s): of the other mode, not the median's
    "processes": pa.int32(),  # worker processes the samples came from (run --processes); null: one
    "process_medians_s": pa.list_(pa.float64()),  # ... each one's median of its clean samples
    "process_spread": pa.float64(),  # ... the slowest one's median / the fastest one's - 1
    "paired_with": pa.string(),  # run --pair-with: the implementation timed sample by sample in alternation
    "partner_samples_s": pa.list_(pa.float64()),  # ... its samples, turn by turn beside samples_s (paired.py)
    "partner_disturbed": pa.list_(pa.bool_()),  # ... which its watch set aside (as `disturbed` does the own)
    "partner_code": pa.string(),  # ... the digest of its code (as impl_code is the own's)
    "paired_speedup": pa.float64(),  # median ratio (partner / own) of the pairs kept: times faster than it
    "paired_ci_lo": pa.float64(),  # the 95% confidence interval of paired_speedup
    "paired_ci_hi": pa.float64(),
    "process_paired_speedups": pa.list_(pa.float64()),  # ... each worker process's, where there were several
    "compile_s": pa.float64(),  # duration of the first (warm-up) call: build, JIT, caches
    "best_config": pa.string(),  # Triton: the autotune config each kernel used, chosen in the first call
    # torch.compile (the @compile modifier, docs/compile.md): frames recompiled during the cell (a new size)
    "recompiles": pa.int32(),
    "recompiles_total": pa.int32(),  # ... recompilations so far in the sweep's worker, this cell's included
    "graph_breaks": pa.int32(),  # ... graph breaks Dynamo hit compiling the code the cell ran
    "graph_break_reason": pa.string(),  # ... the first one's reason
    "dynamic_shapes": pa.bool_(),  # ... whether that code was compiled with symbolic (dynamic) sizes
    "peak_mem_bytes": pa.float64(),
    "page_faults": pa.float64(),  # median minor page faults per timed call (CPU clock)
    "sys_s": pa.float64(),  # mean system (OS) CPU s a call, all threads, of the middle half by wall (CPU clock)
    "cpu_cores": pa.float64(),  # CPU seconds (all threads) over wall time of the timed calls (CPU clock)
    "host_s": pa.float64(),  # median seconds the host took to issue a timed call (GPU clock)
    "mem_gbps": pa.float64(),  # the machine's memory read bandwidth around the measurement (CPU, membw.py)
    "canary_s": pa.float64(),  # a fixed compute-bound call's time around the measurement (CPU, canary.py)
    "canary_ratio": pa.float64(),  # ... over its calibrated time: above 1 + SLOW_PHASE the pass is marked slow
    "other_cores": pa.float64(),  # cores other processes kept busy while the pass was timed (load.py)
    "sm_clock_mhz": pa.float64(),  # GPU: median SM clock while the pass was measured (NVML, gpu_clocks.py)
    "gpu_temp_c": pa.float64(),  # GPU: the highest temperature meanwhile
    "throttled": pa.bool_(),  # GPU: the clock stayed under 90% of its maximum, or a thermal/power reason was set
    "throttle_reasons": pa.string(),  # GPU: why it was held back (NVML reasons, a low SM clock), comma-separated
    "flops": pa.float64(),
    "bytes": pa.float64(),
    "flops_source": pa.string(),  # counted (torch's FlopCounterMode) or declared (the operator's formula)
    "gflops": pa.float64(),
    "gbps": pa.float64(),
    "pct_of_peak": pa.float64(),
    "peak_level": pa.string(),  # the ceiling pct_of_peak holds the bytes against: L2, L3 or DRAM (caches.py)
    "correct": pa.bool_(),
    "max_abs_err": pa.float64(),
    "max_rel_err": pa.float64(),
    "tolerance": pa.float64(),
    "check_params": pa.string(),
}
assert set(ENV_FIELDS) <= set(COLUMNS) and set(CELL_COLUMNS) <= set(COLUMNS)
# What a cell's first call did (its compilation): a measurement taken again later keeps the first one's.
FIRST_CALL_COLUMNS = ("compile_s", "recompiles", "recompiles_total", "graph_breaks", "graph_break_reason",
                      "dynamic_shapes")
# What a pass timed in alternation with a partner says of the pairs (run --pair-with).
PAIRED_COLUMNS = ("paired_with", "partner_samples_s", "partner_disturbed", "partner_code", "paired_speedup",
                  "paired_ci_lo", "paired_ci_hi", "process_paired_speedups")


def stored_list(value: Any) -> list:
    """A list column's value as a list: empty where the row has none (null, or NaN where pandas filled it)."""
    return [] if value is None or (isinstance(value, float) and value != value) else list(value)


def clean_samples(samples: Sequence[float], disturbed: Sequence[bool] | None) -> list[float]:
    """A row's samples its worker did not set aside (`disturbed`); all of them where it set aside every
    one, or where the flags are missing (a row from before them) or do not match the samples."""
    if not disturbed or len(disturbed) != len(samples):
        return list(samples)
    return [s for s, d in zip(samples, disturbed) if not d] or list(samples)


def set_aside(count: int, *flags: Sequence[bool]) -> list[bool]:
    """Per sample of `count`, whether any of `flags` (lists of a flag a sample; one that does not fit them is not
    read) sets it aside; empty where none fits."""
    fitting = [f for f in flags if f and len(f) == count]
    return [any(fs) for fs in zip(*fitting)] if fitting else []


def own_aside(row: Mapping[str, Any]) -> list[bool]:
    """Per own sample of a row, whether its statistics leave it out: set aside as `disturbed`, or an audit's
    `probe`; empty where neither list fits the samples (a row from before them)."""
    return set_aside(len(stored_list(row.get("samples_s"))), stored_list(row.get("disturbed")),
                     stored_list(row.get("probe")))


def median_samples(samples: Sequence[float], disturbed: Sequence[bool] | None,
                   mode_aside: Sequence[bool] | None) -> list[float]:
    """The samples a row's median was taken from: its clean ones (`clean_samples`) and, where its rounds split
    into two modes, only those of the median's mode (`mode_aside` False), so that an interval taken from them
    is about the median the row gives."""
    if not mode_aside or len(mode_aside) != len(samples):
        return clean_samples(samples, disturbed)
    flags = disturbed if disturbed and len(disturbed) == len(samples) else [False] * len(samples)
    kept = [(s, d) for s, d, aside in zip(samples, flags, mode_aside) if not aside]
    return clean_samples([s for s, _ in kept], [d for _, d in kept])
SCHEMA = pa.schema(list(COLUMNS.items()))


def conformed(table: pa.Table) -> pa.Table:
    """`table` as results: it holds RESULT_KEYS, and each column SCHEMA has is cast to SCHEMA's type (benchctl
    writes them so). A ValueError says why it cannot be: a file something else wrote, or changed."""
    missing = [name for name in RESULT_KEYS if name not in table.column_names]
    if missing:
        raise ValueError(f"missing columns: {', '.join(missing)}")
    for i, field in enumerate(table.schema):
        want = COLUMNS.get(field.name)
        if want is not None and field.type != want:
            try:
                table = table.set_column(i, field.name, table.column(i).cast(want))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                raise ValueError(f"column {field.name} holds {field.type}, not {want}") from None
    return table


def beyond_threads(cores: Any, threads: Any) -> bool:
    """A pass's calls kept more cores busy (`cpu_cores`) than torch's `threads` given, by over CORES_OVER."""
    return cores is not None and cores == cores and bool(threads) and cores > threads * (1 + CORES_OVER)


def host_bound(row: Mapping[str, Any]) -> bool:
    """A GPU pass whose host took at least HOST_BOUND of its median to issue each call (`host_s`): its sample is
    the host's time, not its kernels' (the tables' `host` mark)."""
    host, median = row.get("host_s"), row.get("median_s")
    return _number(host) and _number(median) and median > 0 and host >= HOST_BOUND * median


def beside_work(row: Mapping[str, Any]) -> bool:
    """Other processes kept BUSY_WARN_CORES or more busy while the pass was timed (`other_cores`): its time is
    theirs as much as the code's, even where its own threads never waited for a core. A GPU pass only where its
    host set its time (`host_bound`): a GPU clock's sample is the larger of the kernels' time and the host's, so
    a neighbour that slows a host issuing calls faster than the kernels run leaves the sample as it was."""
    cores = row.get("other_cores")
    busy = _number(cores) and cores >= BUSY_WARN_CORES
    return busy and (row.get("device") != vocab.Device.CUDA or host_bound(row))


def slow_machine(row: Mapping[str, Any]) -> bool:
    """The machine's canary ran over SLOW_PHASE slower than calibrated around the pass (`canary_ratio`): a slow
    phase, not the drift of a machine at speed (the tables' `slow` mark)."""
    ratio = row.get("canary_ratio")
    return _number(ratio) and ratio > 1 + SLOW_PHASE


def _number(value: Any) -> bool:
    """A value that is a number, not None or NaN (a row read back from parquet holds NaN for a missing one)."""
    return isinstance(value, (int, float)) and value == value


def left_alone(row: Mapping[str, Any]) -> bool:
    """The machine left the pass alone: it did not stop `disturbed` (too few samples its threads ran without
    waiting for a core), nor was it timed beside other work (`beside_work`)."""
    return row.get("stop") != vocab.Stop.DISTURBED and not beside_work(row)
