"""`benchctl compare`: per-cell change between two runs, with a significance test."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import click
from rich.text import Text

from benchctl.errors import BenchError, UsageError

STYLES = {"regressed": "bold red", "broken": "bold red", "improved": "green", "fixed": "green"}


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value * 1e3:.4g}"


def _params(text: str) -> str:
    """`batch_size=8 H=256` rather than JSON: the table has to fit a terminal."""
    try:
        params = json.loads(text)
    except ValueError:
        return text
    return " ".join(f"{k}={json.dumps(v)}" for k, v in params.items()) if isinstance(params, dict) else text


def _short(path: Path) -> str:
    return path.name if path.is_dir() else f"{path.parent.name}/{path.name}"


def _rows(comparison) -> list[list[str]]:
    rows = []
    for c in comparison.ordered():
        change = "" if c.ratio is None else f"{(c.ratio - 1) * 100:+.1f}%"
        p = "" if c.p_value is None else f"{c.p_value:.2g}"
        status = "" if c.verdict != "broken" and c.verdict != "fixed" else f" ({c.base_status} -> {c.new_status})"
        verdict = Text(c.verdict + status, style=STYLES.get(c.verdict, ""))
        op = c.op if c.target in ("op", "") else f"{c.op}/{c.target}"
        rows.append([op, c.impl, c.device, c.dtype, _params(c.params), c.pass_name,
                     _ms(c.base_median_s), _ms(c.new_median_s), change, p, verdict])
    return rows


@click.command("compare")
@click.argument("base", type=click.Path(exists=True, path_type=Path))
@click.argument("new", type=click.Path(exists=True, path_type=Path))
@click.option("--threshold", default=0.05, show_default=True, type=click.FloatRange(min=0),
              help="Smallest relative change of the median that counts (0.05 = 5%).")
@click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0, 1, min_open=True),
              help="Significance level of the Mann-Whitney U test on the raw samples.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of a table.")
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when any cell regressed or broke.")
@click.option("--across-hosts", is_flag=True, help="Compare cells measured on different kinds of GPU or CPU.")
def command(base: Path, new: Path, threshold: float, alpha: float, as_json: bool, fail_on_regression: bool,
            across_hosts: bool) -> None:
    """Compare run NEW against run BASE cell by cell (run folders or parquet files).

    A cell changed only when its median moved past --threshold AND the samples differ significantly.
    """
    from benchctl import console
    from benchctl.results import compare

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            (a, a_meta), (b, b_meta) = compare.load_side(base), compare.load_side(new)
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from None
    result = compare.compare(a, b, threshold, alpha, a_meta, b_meta, across_hosts)
    for message in [str(w.message) for w in caught] + result.warnings():
        console.warn(message)
    if as_json:
        # plain echo: rich would wrap long lines and break the JSON for the program reading it
        click.echo(json.dumps({"base": str(base), "new": str(new), **result.to_dict()}, indent=2))
    else:
        columns = ["op", "impl", "device", "dtype", "params", "pass", "base ms", "new ms", "change", "p", "verdict"]
        console.out.print(console.table(f"{_short(new)} vs {_short(base)}", columns, _rows(result)))
        console.out.print(", ".join(f"{n} {v}" for v, n in result.counts.items() if n) or "no cells")
    if fail_on_regression and result.regressions:
        raise BenchError(f"{len(result.regressions)} cell(s) regressed or broke ({new} vs {base})")
