"""Config + command-line flags -> the list of cells to run, validated against the registry: the one door
from command-line words to cells, which run, check, profile and maxbatch all go through (`cells`,
`expand`, `one_cell`), so the same words give the same cells whichever command reads them.

IMPLS is `py`, `cpp`, `cuda`, an operator's own variant name, a comma list, or `all`; DEVICES is
`cpu`, `gpu` (alias `cuda`), a comma list, or `all`. Cells come grouped by (operator, target,
implementation, device, dtype) with the swept params ascending, so a failure at one size can skip the
larger ones.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from benchctl.ops import lookup, modifiers, param_rules, registry
from benchctl.ops.cells import DTYPES, Cell
from benchctl.sweep.config import SweepConfig
from benchctl.errors import UsageError
from benchctl.measure.passes import PASSES
from benchctl.ops.registry import Implementation, Operator
from benchctl.sweep.words import choices, parse_devices, split
from benchctl.vocab import PAIR_NONE, PAIR_REFERENCE, PAIR_REFERENCE_ON_CPU, Device


@dataclass(frozen=True)
class SweepRequest:
    impls: str = "all"
    devices: str = "all"
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()
    batch_sizes: tuple[int, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)  # --param KEY=VALUE, for every op that has KEY
    targets: tuple[str, ...] = ()  # --target NAME: only these targets, in the operators that have them
    quick: bool = False
    config: SweepConfig = SweepConfig()
    pair_with: str | None = None  # --pair-with IMPL, PAIR_REFERENCE, PAIR_REFERENCE_ON_CPU or PAIR_NONE (_paired)


def select_ops(names: Sequence[str]) -> list[Operator]:
    ops = registry.operators()
    for n in names:
        if n not in ops:
            raise UsageError(f"unknown operator {n!r}; choose from {', '.join(sorted(ops))}")
    return [ops[n] for n in (names or sorted(ops))]


def select_impls(ops: Sequence[Operator], text: str) -> dict[str, list[str]]:
    """Operator -> the implementations asked for (an op without any of them is left out)."""
    names = split(text, "implementation")
    if "all" in names:
        return {op.name: list(op.implementations) for op in ops}
    names = [modifiers.canonical(n) for n in names]
    known = {i for op in ops for i in op.implementations}
    for n in names:
        if not any(lookup.known(op, n) for op in ops):
            raise UsageError(f"unknown implementation {n!r}; choose from {', '.join(sorted(known))} or all, "
                             f"or add a modifier: {modifiers.SYNTAX}")
    chosen = {op.name: [n for n in names if lookup.known(op, n)] for op in ops}
    return {k: v for k, v in chosen.items() if v}


def param_grid(op: Operator, req: SweepRequest) -> list[dict[str, Any]]:
    """The operator's defaults, then --quick, the config and the flags; list values are swept."""
    values: dict[str, Any] = dict(op.params)
    if req.quick:
        values.update(op.quick)
    overrides = req.config.params_of(op.name)
    overrides.update({k: v for k, v in req.params.items() if k in op.params})
    if req.batch_sizes and "batch_size" in op.params:
        overrides["batch_size"] = list(req.batch_sizes)
    for key in overrides:
        if key not in op.params:
            raise UsageError(f"{op.name} has no param {key!r}; valid params: {', '.join(op.params)}")
    values.update(overrides)
    axes = {k: (v if isinstance(v, list) else [v]) for k, v in values.items()}
    _validate(op, axes)
    combos = [dict(zip(axes, combo)) for combo in itertools.product(*axes.values())]
    return sorted(combos, key=lambda p: [p[k] for k in axes if isinstance(p[k], (int, float))])


def _validate(op: Operator, axes: Mapping[str, list[Any]]) -> None:
    empty = [key for key, vals in axes.items() if not vals]
    if empty:
        raise UsageError(f"{op.name}: param {empty[0]} has an empty list")
    wrong = param_rules.check(op.name, op.params, op.rules, axes)
    if wrong:
        raise UsageError(wrong)


def _check_targets(ops: Sequence[Operator], given: Sequence[str]) -> None:
    known = {t.name for op in ops for t in op.targets}
    for name in given:
        if name not in known:
            raise UsageError(f"unknown target {name!r}; choose from {', '.join(sorted(known))}")


def _check_config_ops(config: SweepConfig) -> None:
    """A config's [params.NAME] or [targets] NAME must name an operator: a typo would time the defaults
    (one that exists but is not selected here is left alone)."""
    known = registry.operators()
    for table, names in (("params", config.params), ("targets", config.targets)):
        for name in names:
            if name not in known:
                raise UsageError(f"{config.path} [{table}]: unknown operator {name!r}; choose from "
                                 f"{', '.join(sorted(known))}")


def _check_params(ops: Sequence[Operator], given: Mapping[str, Any], batch_sizes: Sequence[int] = ()) -> None:
    """A --param goes to the operators that have it; one that none of them has is a typo, not a no-op
    (the sweep would time the defaults under the name the user meant to change)."""
    known = {key for op in ops for key in op.params}
    if batch_sizes and "batch_size" in given:  # one of them would be dropped without a word
        raise UsageError("--param batch_size and the batch size option (--batch-sizes, profile's --batch-size) both "
                         "set batch_size: give one of them")
    for key in given:
        if key not in known:
            raise UsageError(f"no operator here has param {key!r}; choose from {', '.join(sorted(known))}")


def expand(req: SweepRequest) -> list[Cell]:
    """`cells(req)`, or a usage error when the words name none."""
    found = cells(req)
    if not found:
        raise UsageError(f"nothing to run: no implementation among {req.impls!r} supports {req.devices!r}")
    return found


def one_cell(req: SweepRequest) -> Cell:
    """The one cell the words name (profile, maxbatch), as `run` would time it with the same words."""
    found = expand(req)
    if len(found) != 1:
        raise UsageError(f"these words name {len(found)} cells, not one: give one value of each param")
    return found[0]


def selection(found: Sequence[Cell]) -> list[tuple[Operator, Implementation, str]]:
    """The (operator, implementation, device) triples the cells cover (what `check` checks), by operator,
    then implementation, then device, each in the order the words gave them."""
    first: dict[Any, int] = {}
    for cell in found:
        for key in (("op", cell.op), ("impl", cell.op, cell.impl), ("device", cell.device)):
            first.setdefault(key, len(first))
    triples = {(c.op, c.impl, c.device): c for c in found}
    ordered = sorted(triples, key=lambda t: (first["op", t[0]], first["impl", *t[:2]], first["device", t[2]]))
    return [(triples[t].operator, lookup.find(triples[t].operator, t[1]), t[2]) for t in ordered]


def gate_cases(found: Sequence[Cell], given: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """`check --param`: for each operator that has one of the `given` params, the params of the cells `run`
    would time with the same words, as its correctness gate checks them (`Cell.gate_params`), each once.
    Operators without any of them are left out: they keep their own check cases."""
    out: dict[str, list[dict[str, Any]]] = {}
    for cell in found:
        if any(key in cell.operator.params for key in given):
            case = cell.gate_params
            if case not in out.setdefault(cell.op, []):
                out[cell.op].append(case)
    return out


def cells(req: SweepRequest) -> list[Cell]:
    """All cells of the sweep; none where no implementation asked for supports a device asked for.
    Implementation x device pairs the implementation does not support are left out (a CPU-only variant
    on cuda); pairs it supports but cannot run here stay in and are recorded `unavailable` with the reason.

    The implementations of one point (target, device, dtype, params) come one after the other, so a
    round measures the cells a speedup compares seconds apart, not a whole series apart: on a host whose
    speed changes every few seconds, two cells measured minutes apart often land in different phases."""
    ops = select_ops(req.ops or req.config.ops)
    devices = parse_devices(req.devices)
    impls = select_impls(ops, req.impls)
    dtypes = choices(req.dtypes, req.config.dtypes or ("float32",), list(DTYPES), "dtype")
    passes = tuple(choices(req.passes, req.config.passes or PASSES, PASSES, "pass"))
    _check_targets(ops, req.targets)
    _check_params(ops, req.params, req.batch_sizes)
    _check_config_ops(req.config)
    found = []
    for op in ops:
        valid = [t.name for t in op.targets]
        if req.targets:
            targets = [t for t in req.targets if t in valid]
        else:
            targets = choices(req.config.targets_of(op.name), valid, valid, f"{op.name} target")
        grid = param_grid(op, req) if targets else []
        for target, device, dtype, p in itertools.product(targets, devices, dtypes, grid):
            found += [Cell.make(op.name, target, impl, device, dtype, p, passes)
                      for impl in impls.get(op.name, []) if device in lookup.find(op, impl).devices]
    return _paired(found, req.pair_with) if found else found


def _paired(cells: list[Cell], partner: str | None) -> list[Cell]:
    """The cells with their partners (`Cell.paired_with`): none for None or PAIR_NONE; with
    PAIR_REFERENCE_ON_CPU (run's default) each CPU cell's operator reference, where it runs too."""
    if partner in (None, PAIR_NONE):
        return cells
    if partner == PAIR_REFERENCE_ON_CPU:
        return _with_partner(cells, PAIR_REFERENCE, devices=(Device.CPU,))
    return _with_partner(cells, partner, required=True)


def _with_partner(cells: list[Cell], partner: str, devices: tuple[str, ...] = (), required: bool = False) -> list[Cell]:
    """Every cell (on `devices`; all when empty) whose point (operator, target, device, dtype, params) has a
    cell of its partner is timed in alternation with it; the partner's own cells are timed alone. The
    partner is `partner`, or with PAIR_REFERENCE each operator's reference, the implementation its speedups
    are over (a sweep of several operators has no one implementation they all share). `required`: a usage
    error where no cell's partner runs (the user named it)."""
    def partner_of(cell: Cell) -> str:
        return cell.operator.reference if partner == PAIR_REFERENCE else modifiers.canonical(partner)

    points = {c.point for c in cells if c.impl == partner_of(c) and (not devices or c.device in devices)}
    if required and not points:
        raise UsageError(f"--pair-with {partner!r}: {_not_run(partner, cells)}; list it in IMPLS too")
    return [replace(c, paired_with=partner_of(c)) if c.impl != partner_of(c) and c.point in points else c
            for c in cells]


def _not_run(partner: str, cells: list[Cell]) -> str:
    if partner != PAIR_REFERENCE:
        return "it is not among the implementations run here"
    references = sorted({c.operator.reference for c in cells})
    return f"no operator's reference implementation ({', '.join(references)}) is among those run here"

