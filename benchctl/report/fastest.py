"""The answer first (a table at the top of the report, lines under `run`'s tables): for each operator, device and
pass, which implementation was fastest at which sizes, and by how much over the baseline; where another came within
CLOSE of it, that it did, since a run does not tell those apart; and where the earlier runs of the same code in the
folder had the two the other way round, in how many."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from benchctl.analysis.repeat import BY_RUN
from benchctl.analysis.speedup import present_value
from benchctl.analysis.summary import axis_value_text
from benchctl.report import charts
from benchctl.report.speedups import CELL_KEY, doubts, speedups
from benchctl.results import storage
from benchctl.vocab import SHOWN_ORDER, Status

# Two speedups closer than this are not told apart by one run: between runs of the same code on a 2-core VM a
# paired speedup's median moved by 3-8% (benchmarks/README.md, "Against the interval: does the next run land inside?").
CLOSE = 0.10
# What the answers' words mean, said once where they are listed (no capital inside: a page starts it with one).
WORDS = (f"each speedup is over its operator's baseline (the pairs' where timed in pairs); within {CLOSE:.0%}: "
         "another came that close, which one run does not tell apart from the fastest; ahead in earlier runs: in "
         "how many of the earlier runs of the same code in this folder the two were the other way round; in doubt: "
         f"a side of the fastest's speedup, or of another's within {CLOSE:.0%}, was disturbed or (not timed in "
         "pairs) alone beside other work: its time may hold a stall; where others held, such a speedup is given "
         "there, not in the range before it")


@dataclass(frozen=True)
class Answer:
    """One device and pass of a section (`CPU forward`, with its param group) and what was fastest at which sizes."""

    title: str
    text: str

    def __str__(self) -> str:
        return f"{self.title}: {self.text}"


@dataclass(frozen=True)
class Win:
    """The fastest implementation at one size, its speedup over the baseline, and the one next to it."""

    value: float
    impl: str
    speedup: float
    next_impl: str
    next_speedup: float
    swapped: int = 0  # earlier runs that had the two the other way round (`earlier_swaps`) ...
    earlier: int = 0  # ... of these
    doubted: bool = False  # a side of its speedup, or of a close next one's, was disturbed (speedup.a_side_disturbed)

    @property
    def close(self) -> bool:
        return self.speedup < self.next_speedup * (1 + CLOSE)


def wins(part: pd.DataFrame) -> list[Win]:
    """At each size of one device, pass and param group, the fastest implementation by its speedup (the baseline's
    is 1), where two or more ran."""
    found = []
    for value, at in part.groupby("axis_value", sort=True):
        ranked = at.sort_values("speedup", ascending=False)
        if len(ranked) >= 2:
            first, second = ranked.iloc[0], ranked.iloc[1]
            win = Win(float(value), str(first["impl"]), float(first["speedup"]), str(second["impl"]),
                      float(second["speedup"]), *earlier_swaps(first, second))
            found.append(replace(win, doubted=bool(first["doubt"] or (second["doubt"] and win.close))))
    return found


def earlier_swaps(first: pd.Series, second: pd.Series) -> tuple[int, int]:
    """In how many of the earlier runs of the same code (either machine state: repeat.BY_RUN) the paired speedups put
    the fastest and the next the other way round, and of how many runs that timed both: where one was timed in pairs
    with the other, or both in pairs with one partner (compared run by run). (0, 0) where nothing says."""
    partner = _partner(first, second)
    if partner is None:
        return 0, 0
    runs = [_by_run(row, partner) for row in (first, second)]
    common = [run for run in (runs[0] or runs[1] or {}) if all(r is None or run in r for r in runs)]
    values = [[1.0 if r is None else r[run] for run in common] for r in runs]  # the partner's own: 1
    return sum(a <= b for a, b in zip(*values)), len(common)


def _partner(first: pd.Series, second: pd.Series) -> str | None:
    """The implementation both speedups are over: one's pairing partner that is the other, or theirs in common."""
    paired = [row.get("paired_with") if present_value(row.get("paired_with")) else None for row in (first, second)]
    if paired[0] is not None and paired[0] == paired[1]:
        return paired[0]
    return next((row["impl"] for row, other in ((first, paired[1]), (second, paired[0])) if row["impl"] == other), None)


def _by_run(row: pd.Series, partner: str) -> dict[str, float] | None:
    """A row's earlier paired speedups over `partner` by run; None for the partner itself (1 in every run)."""
    found = row.get(BY_RUN)
    return None if row["impl"] == partner else dict(found) if isinstance(found, dict) else {}


def answer(title: str, axis: str, baseline: str, found: list[Win]) -> Answer:
    """`CPU forward`: `py at image_size=256 (the baseline); cpp at image_size=1024 and 4096 (1.43-1.45x py); within
    10%: cpp at 256; ahead in earlier runs: cpp at 256 in 8 of 10`; a speedup in doubt is left out of its span and
    given with its size: `cpp at every batch_size (1.67-2.01x py); in doubt: at 4 (5.81x)`."""
    by_impl: dict[str, list[Win]] = {}
    for win in found:
        by_impl.setdefault(win.impl, []).append(win)
    spans = {impl: at if impl == baseline else _held(at) for impl, at in by_impl.items()}
    said = [f"{impl} {_where(axis, at, len(by_impl) == 1)} ({_over(impl, baseline, spans[impl])})"
            for impl, at in by_impl.items()]
    close = [f"{w.next_impl} at {axis_value_text(w.value)}" for w in found if w.close]
    swapped = [f"{w.next_impl} at {axis_value_text(w.value)} in {w.swapped} of {w.earlier}" for w in found if w.swapped]
    return Answer(title, "; ".join(said) + (f"; within {CLOSE:.0%}: {_listed(close)}" if close else "")
                  + (f"; ahead in earlier runs: {_listed(swapped)}" if swapped else "") + _in_doubt(axis, found, spans))


def _in_doubt(axis: str, found: list[Win], spans: dict[str, list[Win]]) -> str:
    """`; in doubt: at 4 (5.81x)`: the sizes in doubt, each with its speedup where its line's span left it out;
    `; in doubt: at every batch_size` where all are; "" where none is."""
    doubted = [w for w in found if w.doubted]
    if not doubted:
        return ""
    if len(doubted) == len(found) > 1:
        return f"; in doubt: {_where(axis, found, True)}"
    return "; in doubt: at " + _listed([axis_value_text(w.value) + ("" if w in spans[w.impl] else
                                                                     f" ({_figures(w.speedup)}x)") for w in doubted])


def _held(found: list[Win]) -> list[Win]:
    """The wins whose speedups are not in doubt, which the line's span gives (a doubted one is given beside its
    size under `in doubt`); all of them where every one is in doubt."""
    return [w for w in found if not w.doubted] or found


def _where(axis: str, found: list[Win], every: bool) -> str:
    if every and len(found) > 1:
        return f"at every {axis}"
    return f"at {axis}={_listed([axis_value_text(w.value) for w in found])}"


def _over(impl: str, baseline: str, found: list[Win]) -> str:
    """`1.43-1.45x py`; where the baseline was fastest, how far behind the next came where it was not within CLOSE
    (the line names those): `the baseline; next vmap, 4.36-4.86x slower`."""
    if impl != baseline:
        return f"{_span([w.speedup for w in found])}x {baseline}"
    behind = [w for w in found if not w.close]
    if not behind:
        return "the baseline"
    nexts = list(dict.fromkeys(w.next_impl for w in behind))
    return f"the baseline; next {_listed(nexts)}, {_span([1 / w.next_speedup for w in behind])}x slower"


def _span(values: list[float]) -> str:
    low, high = _figures(min(values)), _figures(max(values))
    return low if low == high else f"{low}-{high}"


def _figures(ratio: float) -> str:
    """Three significant figures (1.43, 16.3, 135): a speedup moves by more than the fourth between runs (CLOSE)."""
    return f"{ratio:#.3g}".rstrip(".")


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def answers(rows: pd.DataFrame, baseline: str) -> tuple[Answer, ...]:
    """An answer per device, pass and param group of a section's rows: its fastest implementation at each size (by
    the report's speedups over `baseline`: the pairs' where timed in pairs)."""
    ok = storage.latest(rows[rows["status"] == Status.OK], [*CELL_KEY, "impl"])
    df, _ = charts.with_groups(ok.assign(speedup=speedups(ok, baseline), doubt=doubts(ok, baseline)))
    df = df[df["speedup"].notna()]
    axis = str(df["axis"].dropna().iloc[0]) if df["axis"].notna().any() else "size"
    keys = sorted(df.groupby(["device", "pass", "group"]).groups,
                  key=lambda k: (SHOWN_ORDER.get(k[0], len(SHOWN_ORDER)), SHOWN_ORDER.get(k[1], len(SHOWN_ORDER))))
    out = []
    for device, pass_name, group in keys:
        part = df[(df["device"] == device) & (df["pass"] == pass_name) & (df["group"] == group)]
        found = wins(part)
        if found:
            title = charts.panel_title(device, pass_name) + (f" ({group})" if group else "")
            out.append(answer(title, axis, baseline, found))
    return tuple(out)
