"""In the worker, a cell's params are parsed once, by Cell.from_json: nothing on the way to its rows
parses them again."""

import json

from benchctl.measure.execute import Settings, run_cell
from benchctl.measure.timing import Policy
from benchctl.ops import registry
from benchctl.ops.cells import Cell

FAST = Settings(policy=Policy(warmup=0, warmup_time=0.0, min_samples=2, min_time=0.0, max_time=0.2),
                measure_memory=False, probe_bandwidth=False)


def test_the_worker_path_parses_a_cells_params_only_in_from_json(fixture_ops, monkeypatch):
    cell = Cell.make("axpy", "op", "py", "cpu", "float32", {"batch_size": 2, "dim": 3, "alpha": 0.5})
    check = json.dumps(registry.get("axpy").params_for_check(cell.params), sort_keys=True)
    parsed: list[str] = []
    real = json.loads
    monkeypatch.setattr(json, "loads", lambda text, *a, **k: parsed.append(text) or real(text, *a, **k))
    line = cell.to_json()
    received = Cell.from_json(line)  # what the worker does with the line it reads
    rows = run_cell(received, FAST)
    assert {r["status"] for r in rows} == {"ok"} and {r["correct"] for r in rows} == {True}, [r["message"] for r in rows]
    assert parsed.count(line) == 1
    assert [t for t in parsed if t in (cell.params_json, check) or t != line and "batch_size" in str(t)] == []
    assert {r["params"] for r in rows} == {cell.params_json}
