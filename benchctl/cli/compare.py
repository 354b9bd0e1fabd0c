"""`benchctl compare`: per-cell change between two runs, with a significance test."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.text import Text

from benchctl.cli.options import Finite
from benchctl.errors import BenchError, UsageError
from benchctl.vocab import Verdict

STYLES = {Verdict.SLOWER: "bold red", Verdict.BROKEN: "bold red", Verdict.FASTER: "green", Verdict.FIXED: "green",
          Verdict.UNSURE: "yellow"}


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value * 1e3:.4g}"


def _short(path: Path | str) -> str:
    if isinstance(path, str):  # a baseline, already named
        return path
    return path.name if path.is_dir() else f"{path.parent.name}/{path.name}"


def _op(c) -> str:
    return c.op if c.target in ("op", "") else f"{c.op}/{c.target}"


def _params(c) -> dict | None:
    """The cell's params, or None where they are not a JSON object (a parquet file written by hand)."""
    try:
        params = json.loads(c.params)
    except (TypeError, ValueError):
        return None
    return params if isinstance(params, dict) else None


def _params_text(c, alike: dict) -> str:
    """`image_size=4096`: the cell's params but those every row of its operator shares (`alike`)."""
    params = _params(c)
    if params is None:
        return str(c.params or "")
    return " ".join(f"{k}={json.dumps(v)}" for k, v in params.items() if k not in alike)


def shared_params(cells) -> dict[str, dict]:
    """Per operator (as the table names it), the params every one of its listed cells sets alike: said once under
    the table, not in each row (lstm_cell's rows read `H=64 I=null batch_size=64`)."""
    by_op: dict[str, list[dict]] = {}
    for c in cells:
        by_op.setdefault(_op(c), []).append(_params(c) or {})
    return {op: {k: v for k, v in found[0].items() if all(k in p and p[k] == v for p in found)}
            for op, found in by_op.items()}


def _shared_line(shared: dict[str, dict]) -> str | None:
    said = [f"{op} " + " ".join(f"{k}={json.dumps(v)}" for k, v in params.items() if v is not None)
            for op, params in shared.items() if any(v is not None for v in params.values())]
    return f"params every row of an operator shares: {'; '.join(said)}" if said else None


def _rows(comparison, shared: dict[str, dict]) -> list[list[str]]:
    """A row per cell a run timed; its change, and against its partner (named in the verdict where the pairs gave
    it, and in --json) its time's change relative to the partner's."""
    from benchctl.analysis.comparison import time_change

    rows = []
    for c in comparison.ordered():
        if not c.timed():  # counted below, listed in --json
            continue
        change = "" if c.ratio is None else time_change(c.ratio, c.ratio_low, c.ratio_high)
        against = "" if c.relative is None else time_change(c.relative, c.relative_low, c.relative_high)
        p_value = c.relative_p if c.by_pairs else c.p_adjusted  # the evidence the verdict rests on
        p = "" if p_value is None else f"{p_value:.2g}"
        verdict = Text(c.words(), style=STYLES.get(c.verdict, ""))
        rows.append([_op(c), c.impl, c.device, c.dtype, _params_text(c, shared.get(_op(c), {})), c.pass_name,
                     _ms(c.base_median_s), _ms(c.new_median_s), change, against, p, verdict])
    return rows


COLUMNS = ("op", "impl", "device", "dtype", "params", "pass", "base ms", "new ms", "change", "against partner", "p",
           "verdict")
# What gives verdicts where noise, one process or the machine's phases left cells unsure (docs/measuring.md).
DECIDE_MORE = "runs with --processes 3 (not --quick) on a quiet machine decide more"
IN_TITLE = ("device", "dtype")  # said once, in the title, where every row holds the same
# Left out where no row fills them: no cell was paired in both runs, every row of each operator shares its params.
LEFT_OUT_EMPTY = ("against partner", "params")


def _folded(columns: tuple[str, ...], rows: list[list]) -> tuple[str, list[str], list[list]]:
    """The table narrowed to what differs between its rows: a device or dtype every row shares goes into the
    title (` (cpu, float32)`), a column no row fills is left out; twelve columns wrapped every cell's name."""
    one = {name: {str(r[i]) for r in rows} for i, name in enumerate(columns)}
    shared = [name for name in IN_TITLE if len(one[name]) == 1]
    gone = set(shared) | {name for name in LEFT_OUT_EMPTY if one[name] <= {""}}
    kept = [i for i, name in enumerate(columns) if name not in gone]
    said = f" ({', '.join(one[name].pop() for name in shared)})" if shared and rows else ""
    return said, [columns[i] for i in kept], [[r[i] for i in kept] for r in rows]


def _mostly_unsure(comparison) -> str | None:
    """Where over half the cells both runs timed are unsure, what decides more."""
    timed = comparison.timed_in_both
    if not timed or comparison.counts.get(Verdict.UNSURE, 0) * 2 <= timed:
        return None
    return f"most cells are unsure: {DECIDE_MORE}"


def _counts(comparison) -> str:
    """The cells of each verdict, in one line, the unsure ones by their reasons, and how many the table leaves out
    (timed in no run): `53 unsure (38 noisy; 13 one side in a slow phase, one at speed; 2 one process), 1 same`."""
    reasons = "; ".join(f"{n} {reason}" for reason, n in comparison.unsure_reasons.items())
    said = ", ".join(f"{n} {v}" + (f" ({reasons})" if v == Verdict.UNSURE else "")
                     for v, n in comparison.counts.items() if n) or "no cells"
    left_out = sum(not c.timed() for c in comparison.cells)
    return said + (f"; not listed: {left_out} timed in no run (--json has them)" if left_out else "")


@click.command("compare")
@click.argument("runs", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--baseline", "baseline_name", metavar="NAME",
              help="Compare the one run given with baseline NAME for its machine kind (see `benchctl baseline`).")
@click.option("--root", default="results", show_default=True, type=click.Path(path_type=Path),
              help="The results folder the baselines live in.")
@click.option("--threshold", "--min-effect", default=0.05, show_default=True, type=Finite(min=0),
              help="Minimum effect: the smallest change of the median that counts (0.05 = 5%).")
@click.option("--alpha", default=0.05, show_default=True, type=Finite(0, 1, min_open=True),
              help="Significance level of the Mann-Whitney U test (adjusted for the number of cells).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of a table.")
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when any cell is slower, or broke.")
@click.option("--across-hosts", is_flag=True, help="Compare cells measured on different kinds of GPU or CPU.")
def command(runs: tuple[Path, ...], baseline_name: str | None, root: Path, threshold: float, alpha: float,
            as_json: bool, fail_on_regression: bool, across_hosts: bool) -> None:
    """Compare run NEW against run BASE cell by cell: `compare BASE NEW`, or `compare --baseline NAME NEW`
    (run folders or parquet files).

    Each cell is faster, slower, same or unsure: slower (faster) when the 95% interval of the ratio of
    medians lies wholly beyond the minimum effect and the Mann-Whitney test agrees; same when the interval
    lies within it; unsure otherwise. "change" shows the ratio and its interval, in percent. A cell timed
    in alternation with the same partner in both runs (run --pair-with) is also judged by its time relative
    to the partner's ("against partner"), which the machine's speed moves far less: past 15% to count.
    """
    from benchctl import console
    from benchctl.analysis import compare

    with console.warnings_shown():
        (base, a, a_meta), (new, b, b_meta) = _sides(runs, baseline_name, root, across_hosts)
    result = compare.compare(a, b, threshold, alpha, a_meta, b_meta, across_hosts)
    for message in result.warnings():
        console.warn(message)
    if as_json:
        # plain echo: rich would wrap long lines and break the JSON for the program reading it
        click.echo(json.dumps({"base": str(base), "new": str(new), **result.to_dict()}, indent=2))
    else:
        shared = shared_params([c for c in result.ordered() if c.timed()])
        said, columns, rows = _folded(COLUMNS, _rows(result, shared))
        console.out.print(console.table(f"{_short(new)} vs {_short(base)}{said}", columns, rows, wrap=("verdict",)))
        for line in filter(None, [_shared_line(shared), _counts(result), _mostly_unsure(result)]):
            console.out.print(line)
    if fail_on_regression and not result.compared:
        raise UsageError(f"no cell was in both runs ({new} vs {base}): nothing to judge for --fail-on-regression")
    if fail_on_regression and result.regressions:
        raise BenchError(f"{len(result.regressions)} cell(s) slower or broken ({new} vs {base})")
    unsure = result.counts.get(Verdict.UNSURE, 0)
    if fail_on_regression and unsure:
        console.warn(f"{unsure} of {result.timed_in_both} cells timed in both runs were unsure: --fail-on-regression "
                     "passes them, so a regression among them would not fail this check (their reasons are in the "
                     f"table; {DECIDE_MORE})")


def _sides(runs: tuple[Path, ...], baseline_name: str | None, root: Path, across_hosts: bool):
    """(path, rows, run metadata) of BASE and of NEW."""
    from benchctl.analysis import baselines, compare

    wanted = 1 if baseline_name else 2
    if len(runs) != wanted:
        usage = "compare --baseline NAME NEW" if baseline_name else "compare BASE NEW"
        raise UsageError(f"{usage} takes {wanted} run{'s' if wanted > 1 else ''}, got {len(runs)}")
    try:
        new_rows, new_meta = compare.load_side(runs[-1])
        kept = baselines.find(baseline_name, new_rows, root, across_hosts) if baseline_name else None
        base_rows, base_meta = compare.load_side(kept["path"] if kept else runs[0])
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    base = f"baseline {baseline_name} ({kept['run']}, {kept['kind']})" if kept else runs[0]
    return (base, base_rows, base_meta), (runs[-1], new_rows, new_meta)
