"""The ray executor: series run on the nodes of a Ray cluster, each in a worker subprocess on its node.

With no address it starts a Ray of its own on this machine, listening on 127.0.0.1 only. A GPU series
asks for one GPU (and, with --gpu-kind, for that accelerator type, once per kind listed, so one command
compares GPU kinds). A CPU series asks for a whole node's CPUs: a CPU timing next to other work is wrong.
Rows come back as each series finishes. A node that dies has its series retried once elsewhere by Ray;
if that fails too, the series' rows are recorded `lost`, naming the nodes it ran on and the error. Ctrl-C cancels what is left.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from benchctl.errors import UsageError
from benchctl.ops.cells import Cell
from benchctl.results.schema import Rows
from benchctl.sweep.executors import failed
from benchctl.sweep.series import SeriesJob, run_series
from benchctl.vocab import Device, Status

Series = tuple[Cell, ...]
Deliver = Callable[[Series, Rows], None]
INSTALL = "--executor ray needs Ray: pip install 'benchctl[ray]'"
KIND_PREFIX = "accelerator_type:"


def _ray(loopback: bool = False) -> Any:
    """Ray, imported on first use. `loopback`: a Ray started here listens on 127.0.0.1 only (Ray reads
    this switch once, when it is imported; without it a local Ray binds to the machine's address)."""
    if loopback:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise UsageError(INSTALL) from None
    return ray


def _remote_run(job: SeriesJob, ledger: Any = None, key: int = 0) -> Rows:
    """Runs on a node: the node's id goes into every row, and into the ledger first, so a series lost
    with its node can name the node."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()[:12]
    if ledger is not None:
        ledger.started.remote(key, node_id)
    return run_series(replace(job, node_id=node_id))


class _Ledger:
    """Which nodes each submitted series started on (an actor on the driver's cluster, no CPU)."""

    def __init__(self) -> None:
        self.nodes: dict[int, list[str]] = {}

    def started(self, key: int, node_id: str) -> None:
        self.nodes.setdefault(key, []).append(node_id)

    def where(self, key: int) -> list[str]:
        return self.nodes.get(key, [])


def lost_message(error: BaseException, nodes: Sequence[str]) -> str:
    first = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
    where = f"on node {', then '.join(nodes)}" if nodes else "before it reached a node"
    return f"lost {where}: {first}"


def _runtime_env() -> dict[str, Any]:
    """The driver's BENCHCTL_* settings apply on every node (not the cache folder: that is each node's)."""
    keep = {k: v for k, v in os.environ.items() if k.startswith("BENCHCTL_") and k != "BENCHCTL_CACHE"}
    return {"env_vars": keep} if keep else {}


def _reachable(address: str, timeout: float = 5.0) -> None:
    """Ray retries an unreachable HOST:PORT for minutes; one TCP connect says at once that nothing is there."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto", or a ray:// address: Ray's own message will do
    with socket.create_connection((host, int(port)), timeout=timeout):
        pass


@dataclass
class RayCluster:
    job: SeriesJob  # the settings every series shares; its cells are replaced per series
    address: str | None = None  # None: a Ray of our own on this machine, on loopback
    gpu_kinds: Sequence[str] = ()
    # Resource requests per series (one request per submission); replaceable so GPU scheduling is tested
    # with CPU cells and custom resources.
    requests: Callable[["RayCluster", Series], list[dict[str, Any]]] | None = None
    _started: bool = field(default=False, repr=False)

    def start(self, series: Sequence[Series]) -> None:
        """Connect (or start a Ray of our own), then check the cluster can run `series`."""
        self.connect()
        try:
            self.validate(series)
        except UsageError:
            self.close()
            raise

    def connect(self) -> None:
        ray = _ray(loopback=not self.address)
        if ray.is_initialized():
            return
        try:
            if self.address:
                _reachable(self.address)
                ray.init(address=self.address, logging_level="ERROR", log_to_driver=False,
                         runtime_env=_runtime_env())
            else:
                ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False,
                         runtime_env=_runtime_env())
                self._started = True
        except (OSError, ConnectionError, RuntimeError, ValueError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UsageError(f"no Ray cluster at {self.address}: {first}") from None

    def close(self) -> None:
        if self._started:
            _ray().shutdown()
            self._started = False

    def default_requests(self, series: Series) -> list[dict[str, Any]]:
        if series[0].device != Device.CUDA:
            return [{"num_cpus": self._whole_node_cpus()}]
        kinds = self.gpu_kinds or [None]
        return [{"num_gpus": 1, **({"resources": {KIND_PREFIX + k: 0.001}} if k else {})} for k in kinds]

    def _whole_node_cpus(self) -> float:
        nodes = [n for n in _ray().nodes() if n.get("Alive")]
        return max(n["Resources"].get("CPU", 0) for n in nodes)

    def validate(self, series: Sequence[Series]) -> None:
        """Bad input is one line and nothing runs: GPU work on a cluster without GPUs, or a kind no node has."""
        resources = _ray().cluster_resources()
        if any(s[0].device == Device.CUDA for s in series) and self.requests is None:
            if resources.get("GPU", 0) < 1:
                raise UsageError("the Ray cluster has no GPU, and the sweep has GPU cells")
            missing = [k for k in self.gpu_kinds if KIND_PREFIX + k not in resources]
            if missing:
                have = sorted(r[len(KIND_PREFIX):] for r in resources if r.startswith(KIND_PREFIX))
                raise UsageError(f"no node of the Ray cluster has GPU kind {', '.join(missing)} "
                                 f"(kinds there: {', '.join(have) or 'none'})")

    def run(self, series: Sequence[Series], deliver: Deliver) -> None:
        ray = _ray()
        remote = ray.remote(max_retries=1, retry_exceptions=False)(_remote_run)
        ledger = ray.remote(num_cpus=0)(_Ledger).remote()
        requests = self.requests or RayCluster.default_requests
        submissions = [(s, request) for s in series for request in requests(self, s)]
        pending = {remote.options(**request).remote(replace(self.job, cells=s), ledger, key): (key, s)
                   for key, (s, request) in enumerate(submissions)}
        try:
            while pending:
                (ref,), _ = ray.wait(list(pending), num_returns=1)
                key, done = pending.pop(ref)
                deliver(done, self._rows(ref, done, lambda: ray.get(ledger.where.remote(key), timeout=30)))
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise

    @staticmethod
    def _rows(ref: Any, series: Series, nodes: Callable[[], list[str]]) -> Rows:
        ray = _ray()
        try:
            return ray.get(ref)
        except ray.exceptions.RayError as exc:  # the node died twice, or its worker did
            try:
                where = nodes()
            except ray.exceptions.RayError:
                where = []
            return [r.to_row() for cell in series for r in failed(cell, Status.LOST, lost_message(exc, where))]
