"""What could not run: a device where nothing ran, implementations that ran nowhere on a device, one line each."""

import pandas as pd

from benchctl.analysis.absent import absent
from benchctl.analysis.summary import summary_tables
from tests.analysis.test_summary import rows


def test_a_device_where_nothing_ran_is_one_line_not_tables():
    reason = "no CUDA device: torch.cuda.is_available() is False"
    gpu = [{**r, "device": "cuda", "status": "unavailable", "median_s": None, "message": reason,
            "pass": p} for r in rows().to_dict("records") for p in ("forward", "backward")]
    df = pd.concat([rows(), pd.DataFrame(gpu)], ignore_index=True)
    tables = summary_tables(df, {"lstm_cell": "py"})
    assert len(tables) == 2 and all(" on cpu " in t.title for t in tables)
    [line] = absent(df)
    assert line.device == "cuda" and line.cells == 5  # 5 cells, two passes each
    assert line.line() == f"cuda: not available here (5 cells recorded unavailable: {reason})"
    assert absent(rows()) == []  # a device with one row that ran keeps its tables


def test_implementations_that_ran_nowhere_on_a_device_are_one_line_per_reason_not_rows():
    gpu_only = "Triton runs on a GPU; correctness checked on CPU with the interpreter"
    never = [{**r, "impl": impl, "status": "unavailable", "median_s": None, "message": why}  # 3 cells each
             for r in rows().to_dict("records")
             for impl, why in (("triton", gpu_only), ("triton-channels", gpu_only), ("ext", "the build failed"))]
    df = pd.concat([rows(), pd.DataFrame(never)], ignore_index=True)
    lines = absent(df)
    assert [a.line() for a in lines] == [
        f"triton, triton-channels on cpu: not available here (6 cells recorded unavailable: {gpu_only})",
        "ext on cpu: not available here (3 cells recorded unavailable: the build failed)",
    ]
    tables = summary_tables(df, {"lstm_cell": "py"})
    assert [t.rows for t in tables] == [t.rows for t in summary_tables(rows(), {"lstm_cell": "py"})]
    df.loc[len(rows()), "status"] = "ok"  # triton ran once on the CPU: its other cells keep their statuses
    assert [a.impls for a in absent(df)] == [("triton-channels",), ("ext",)]
