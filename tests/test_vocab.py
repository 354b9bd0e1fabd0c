"""The vocabulary is defined once, on the ground floor: no module spells one of its words to compare with,
the columns and the command line take their words from it, and it imports nothing above it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from benchctl import vocab

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "benchctl"
# The words no module compares against as a bare string. Left out: the devices, as "cpu" and "cuda" are
# torch's own device types too (torch.device(x).type, an extension's build kind), and TF32's "default",
# "on" and "off", which other settings say too (torch.compile's mode "default").
CHECKED = (vocab.Status, vocab.RunState, vocab.Stop, vocab.TimingMode, vocab.Pass, vocab.Verdict,
           vocab.CommitVerdict, vocab.Executor, vocab.Allocator)
WORDS = {member.value for enum in CHECKED for member in enum}


def _literals(node: ast.AST):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _literals(element)


def spelled_words(source: str) -> list[tuple[int, str]]:
    """(line, word) of each vocabulary word a comparison (or a `case`) spells as a literal. Of `x in y`
    only y counts: `"error" in reply` asks for a key, not for the status."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, sides, sides[1:]):
                compared = [right] if isinstance(op, (ast.In, ast.NotIn)) else [left, right]
                found += [(node.lineno, word) for side in compared for word in _literals(side) if word in WORDS]
        elif isinstance(node, ast.MatchValue):
            found += [(node.lineno, word) for word in _literals(node.value) if word in WORDS]
    return found


def test_the_checker_finds_a_spelled_word_and_passes_a_constant():
    source = ('if row["status"] != "ok": pass\n'
              'if verdict in ("slower", "broken"): pass\n'
              'if "error" in reply: pass\n'
              'if row["status"] == Status.OK: pass\n'
              'match stop:\n    case "converged": pass\n')
    assert spelled_words(source) == [(1, "ok"), (2, "slower"), (2, "broken"), (6, "converged")]


def test_no_module_compares_against_a_spelled_word():
    spelled = [f"{path.relative_to(REPO)}:{line}: {word!r}"
               for path in sorted(PACKAGE.rglob("*.py")) if path != PACKAGE / "vocab.py"
               for line, word in spelled_words(path.read_text())]
    assert not spelled, spelled


def test_the_words_are_distinct_within_each_enum_and_stay_plain_strings_in_parquet():
    for enum in (*CHECKED, vocab.Device, vocab.Tf32):
        assert len({m.value for m in enum}) == len(enum), enum
    table = pa.Table.from_pylist([{"status": vocab.Status.OK, "pass": vocab.Pass.FORWARD_BACKWARD}])
    row = table.to_pylist()[0]
    assert row == {"status": "ok", "pass": "forward_backward"}
    assert type(row["status"]) is str


def test_the_tuples_are_the_enums_values():
    assert vocab.PASSES == ("forward", "backward", "forward_backward")
    assert vocab.DEVICES == ("cpu", "cuda")
    assert vocab.EXECUTORS == ("local", "pool", "ray")
    assert vocab.ALLOCATORS == ("system", "jemalloc", "tcmalloc")
    assert vocab.TF32_MODES == {"default": None, "on": True, "off": False}
    assert set(vocab.DEVICE_ALIASES.values()) == set(vocab.DEVICES)
    assert vocab.FAILED == tuple(s for s in vocab.Status if s != "ok") and set(vocab.BROKEN) < set(vocab.FAILED)


def test_schema_and_the_analysis_take_their_words_from_the_vocabulary():
    from benchctl.machine import allocator
    from benchctl.analysis import comparison
    from benchctl.results import schema

    assert not {"PASSES", "DEVICES", "EXECUTORS", "ALLOCATORS", "TF32_MODES", "DTYPE_NAMES", "Pass", "Status", "Stop",
                "TimingMode"} & set(vars(schema))  # defined once, in the vocabulary
    assert comparison.VERDICTS == tuple(vocab.Verdict)
    assert set(comparison.REGRESSIONS) == {vocab.Verdict.SLOWER, vocab.Verdict.BROKEN}
    assert set(allocator.LIBRARIES) == set(vocab.ALLOCATORS)


@pytest.mark.parametrize("command, option, words", [
    ("run", "executor", vocab.EXECUTORS), ("run", "allocator", vocab.ALLOCATORS),
    ("run", "tf32", tuple(vocab.TF32_MODES)), ("profile", "pass_name", vocab.PASSES),
    ("profile", "dtype", vocab.DTYPE_NAMES), ("maxbatch", "pass_name", vocab.PASSES)])
def test_the_command_line_offers_the_vocabularys_choices(command, option, words):
    import importlib

    cmd = importlib.import_module(f"benchctl.cli.{command}").command
    param = next(p for p in cmd.params if p.name == option)
    assert tuple(param.type.choices) == tuple(words)


def test_the_vocabulary_imports_nothing_of_benchctls_nor_torch():
    code = ("import sys, benchctl; package = set(sys.modules); import benchctl.vocab; "
            "above = sorted(m for m in set(sys.modules) - package if m != 'benchctl.vocab'); "
            "assert not any(m.startswith(('benchctl.', 'torch')) for m in above), above")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
