"""A history with a machine step and a code step: does `history` find the code's and not the machine's?

    .venv/bin/python benchmarks/history_bench.py [--out /tmp/hist] [--judge-only]

A git repository of five commits holds the `slowed` operator (benchmarks/aa_ops) with its planted
slowdown written in the file (SLOWDOWN): 1.0 up to the fourth commit, 1.2 from it on, so `planted` takes
1.2x as long as its reference `py` from there. The other commits change a file beside it. At each commit,
one `benchctl run py,planted cpu` as a user types it (3 processes, `planted` timed in alternation with
`py`); the run at the second commit has a busy neighbour (a process that keeps one core busy). Then the
history's steps are found and judged twice: as `benchctl history` does (by the time against py, the
partner's code digest being the same throughout), and on the own times only (the pair columns taken
away). Prints, per pass of `planted`, where each finds steps and what it calls them. Run it with nothing
else on the machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHCTL = [sys.executable, "-m", "benchctl"]
SLOWDOWNS = (1.0, 1.0, 1.0, 1.2, 1.2)  # per commit
BUSY_AT = 1  # the commit whose run has a busy neighbour
CODE_AT = SLOWDOWNS.index(1.2)
BUSY = "while True: pass"


def operator(slowdown: float) -> str:
    text = (HERE / "aa_ops" / "slowed.py").read_text()
    text = text.replace('float(os.environ.get("AA_SLOWDOWN", "1"))', "SLOWDOWN")
    return text.replace("LINKS = 20", f"SLOWDOWN = {slowdown}\nLINKS = 20", 1)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@localhost",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def measure(out: Path) -> None:
    repo, results = out / "repo", out / "results"
    (repo / "ops").mkdir(parents=True)
    git(repo, "init", "-q")
    for i, slowdown in enumerate(SLOWDOWNS):
        (repo / "ops" / "slowed.py").write_text(operator(slowdown))
        (repo / "NOTES").write_text(f"commit {i}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", f"commit {i}: SLOWDOWN {slowdown}")
        neighbour = subprocess.Popen([sys.executable, "-c", BUSY]) if i == BUSY_AT else None
        try:
            subprocess.run([*BENCHCTL, "run", "py,planted", "cpu", "--op", "slowed", "--ops-dir", str(repo / "ops"),
                            "--out", str(results)], check=True, capture_output=True)
        finally:
            if neighbour:
                neighbour.kill()
                neighbour.wait()
        print(f"commit {i} measured", file=sys.stderr, flush=True)


def judge(out: Path) -> None:
    from benchctl.analysis import history, steps
    from benchctl.results.schema import PAIRED_COLUMNS

    rows = history.load(root=out / "results")
    rows = rows[rows["impl"] == "planted"]
    labels = {}
    alone = rows.assign(**dict.fromkeys(PAIRED_COLUMNS))  # as if never paired
    for name, frame in (("as history does", rows), ("own times only", alone)):
        for s in history.series(frame):
            labels = {p.sha: i for i, p in enumerate(s.points)}
            found = steps.steps(s)
            said = ", ".join(f"at commit {labels[st.after.sha]}: {st.change.words()} "
                             f"(own {st.change.ratio:.3f}x" + (f", against py {st.change.relative:.3f}x"
                                                               if st.change.relative else "") + ")"
                             for st in found) or "no step"
            print(f"{s.cell['pass']:<17} {name:<23} {said}")
    print(f"(code changed at commit {CODE_AT}; busy neighbour at commit {BUSY_AT})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/hist"))
    parser.add_argument("--judge-only", action="store_true", help="judge the runs already under --out again")
    args = parser.parse_args()
    if not args.judge_only:
        if args.out.exists():
            sys.exit(f"{args.out} exists: give another --out, or --judge-only")
        measure(args.out)
    judge(args.out)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
