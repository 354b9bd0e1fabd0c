"""How much of the change between two runs of the same code the canary explains: per CPU pass both runs timed
ok, the change of its median against the change of its canary (`canary_ratio`, the mean of the readings around
the pass).

    .venv/bin/python benchmarks/canary_track_bench.py BASE_RUN NEW_RUN

Prints the passes matched, the correlation of the two changes (in logs), the median size of the change as
timed and divided by the canary's change (what normalising each pass by its canary would leave), and the
median change of the passes whose canary moved more than compare's MACHINE_MOVED bar against those whose did
not (the passes `compare` withholds a verdict from for that reason). Two runs of the same code, one after the
other with nothing else running, are an A/A pair: whatever moved them is the machine.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from benchctl.analysis.verdict import MACHINE_MOVED
from benchctl.results import storage
from benchctl.results.schema import CELL_COLUMNS
from benchctl.vocab import Device, Status

KEYS = [*CELL_COLUMNS, "pass"]


def matched(base: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """The ok CPU passes both runs timed with a canary, one row each: log changes of the median and canary."""
    def ok(rows: pd.DataFrame) -> pd.DataFrame:
        kept = rows[(rows["status"] == Status.OK) & (rows["device"] == Device.CPU) & rows["canary_ratio"].notna()]
        return kept.set_index(KEYS)[["median_s", "canary_ratio"]]
    both = pd.merge(ok(base), ok(new), left_index=True, right_index=True, suffixes=("_base", "_new"))
    return pd.DataFrame({"time": np.log(both["median_s_new"] / both["median_s_base"]),
                         "canary": np.log(both["canary_ratio_new"] / both["canary_ratio_base"])})


def tracking(pairs: pd.DataFrame) -> dict[str, float]:
    """What the canary says of the passes' changes (`matched`): their correlation, the median |change| as timed
    and after dividing by the canary's, and the median |change| of the passes whose canary moved past
    MACHINE_MOVED["canary"] and of the others (NaN where a group is empty)."""
    moved = pairs["canary"].abs() > math.log1p(MACHINE_MOVED["canary"])
    spread = float(pairs["time"].std()) > 0 and float(pairs["canary"].std()) > 0
    return {"passes": float(len(pairs)),
            "correlation": float(np.corrcoef(pairs["time"], pairs["canary"])[0, 1]) if spread else math.nan,
            "timed": float(pairs["time"].abs().median()),
            "divided": float((pairs["time"] - pairs["canary"]).abs().median()),
            "moved": float(pairs["time"][moved].abs().median()), "moved_passes": float(moved.sum()),
            "still": float(pairs["time"][~moved].abs().median())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args()
    found = tracking(matched(storage.load_run(args.base), storage.load_run(args.new)))
    pct = lambda v: f"{math.expm1(v):.1%}"  # noqa: E731 - a log change as a percentage
    print(f"{found['passes']:.0f} CPU passes in both runs; correlation of their change with the canary's: "
          f"{found['correlation']:.2f}")
    print(f"median |change|: {pct(found['timed'])} as timed, {pct(found['divided'])} divided by the canary's")
    print(f"canary moved over {MACHINE_MOVED['canary']:.0%}: {found['moved_passes']:.0f} passes, median |change| "
          f"{pct(found['moved'])}; the others {pct(found['still'])}")


if __name__ == "__main__":
    main()
