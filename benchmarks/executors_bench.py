"""What fanning out costs and gains: the per-series overhead of the pool and ray executors against the
local one, and one sweep's wall time on a local Ray cluster of one node and of two.

    .venv/bin/python benchmarks/executors_bench.py [--repeats 2]

Part 1 runs the same small CPU sweep (the `faulty` test operator's `py` series, tiny cells) with each
executor and divides the extra wall time by the number of series; a Ray cluster's start is timed apart.
Part 2 runs independent single-thread series, each one cell sampled for --seconds of real work, on a Ray
cluster of one 1-CPU node, then of two, both started on 127.0.0.1 with ray.cluster_utils.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # every Ray here on 127.0.0.1

from benchctl.measure.execute import Settings  # noqa: E402
from benchctl.measure.timing import Policy  # noqa: E402
from benchctl.ops import registry  # noqa: E402
from benchctl.ops.cells import Cell  # noqa: E402
from benchctl.sweep.cluster import RayCluster  # noqa: E402
from benchctl.sweep.plan import Plan  # noqa: E402
from benchctl.sweep.series import SeriesJob, group  # noqa: E402
from benchctl.sweep.session import Session  # noqa: E402

OPS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "ops"
QUICK = Settings(policy=Policy(warmup=1, warmup_time=0, min_samples=5, max_samples=20, min_time=0.02, max_time=1),
                 probe_bandwidth=False)


def sweep_cells(impl: str, series: int, sizes=(2, 4, 8)) -> list[Cell]:
    return [Cell.make("faulty", "op", impl, "cpu", "float32", {"batch_size": b, "dim": 8 + s}, ("forward",))
            for s in range(series) for b in sizes]


def timed_run(cells: list[Cell], executor: str, address: str | None = None,
              settings: Settings = QUICK) -> float:
    """Wall seconds of the sweep, a Ray cluster's start left out (paid once per command, not per series)."""
    plan = Plan(cells, ops_dirs=(str(OPS),), executor=executor, address=address, threads=1, timeout=120)
    plan.settings = lambda: settings  # the same timing settings for every executor
    fanout = plan.fanout()
    if fanout is not None:
        fanout.start(group(cells))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        Session.open(plan, Path(out), fanout=fanout).run()
    return time.perf_counter() - start


def overhead(repeats: int, series: int) -> None:
    """local and pool alternate before any Ray runs (its processes would load the machine for them too);
    ray runs last, against the same local figure."""
    import ray

    cells = sweep_cells("py", series)
    print(f"part 1: {series} series of 3 cells, median of {repeats} runs each")
    walls: dict[str, list[float]] = {"local": [], "pool": [], "ray": []}
    for _ in range(repeats):
        for name in ("local", "pool"):
            walls[name].append(timed_run(cells, name))
    starts = []
    for _ in range(repeats):  # a Ray of our own per run, as each `benchctl run` starts one; its start left out
        start = time.perf_counter()
        RayCluster(SeriesJob((), QUICK)).connect()
        starts.append(time.perf_counter() - start)
        walls["ray"].append(timed_run(cells, "ray"))
        ray.shutdown()
    print(f"  ray start (once per command, not counted below): {statistics.median(starts):.1f} s")
    local = statistics.median(walls["local"])
    print(f"  local: {local:.2f} s")
    for name in ("pool", "ray"):
        wall = statistics.median(walls[name])
        print(f"  {name}: {wall:.2f} s, {100 * (wall / local - 1):+.1f}% of local, "
              f"{(wall - local) / series * 1000:+.0f} ms per series")


def nodes(repeats: int, series: int, seconds: float) -> None:
    import ray
    from ray.cluster_utils import Cluster

    ray.shutdown()

    busy = Settings(policy=Policy(warmup=1, warmup_time=0, min_samples=5, max_samples=10**9, min_time=seconds,
                                  max_time=seconds), probe_bandwidth=False)
    print(f"part 2: {series} independent series of {seconds:g} s each, 1-CPU nodes, threads=1")
    walls = {}
    for n in (1, 2):
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        for _ in range(n - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        runs = [timed_run(sweep_cells("py", series, sizes=(64,)), "ray", cluster.address, busy)
                for _ in range(repeats)]
        walls[n] = statistics.median(runs)
        ray.shutdown()
        cluster.shutdown()
        print(f"  {n} node(s): {walls[n]:.1f} s")
    print(f"  speedup 2 nodes / 1 node: {walls[1] / walls[2]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--series", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--part", type=int, choices=(1, 2), help="only part 1 (overhead) or part 2 (nodes)")
    args = parser.parse_args()
    registry.discover([OPS])
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    if args.part != 2:
        overhead(args.repeats, args.series)
    if args.part != 1:
        nodes(args.repeats, args.series, args.seconds)


if __name__ == "__main__":
    main()
