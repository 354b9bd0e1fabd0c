"""The memory allocator against the two-mode cells: hoconv2d's cpp backward (B=16) and naflex_posembed's
cpp forward+backward (B=256), each measured under glibc (system), jemalloc and tcmalloc with interleaved
rounds, through `benchctl run` exactly as a user would; and under glibc once more with the extensions'
output blocks off (BENCHCTL_OUTPUT_BLOCKS_MIB=0: every large result is fresh memory, as before they kept it).

    .venv/bin/python benchmarks/allocators_bench.py [--rounds 3]

Prints per allocator: median ms, the two modes if the rounds disagreed, page faults and system ms per call.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

from benchctl.results import storage

CELLS = {
    "hoconv2d cpp backward B=16": ["cpp", "cpu", "--op", "hoconv2d", "--target", "filter", "--batch-sizes", "16",
                                   "--passes", "backward"],
    "naflex_posembed cpp fwd+bwd B=256": ["cpp", "cpu", "--op", "naflex_posembed", "--batch-sizes", "256",
                                          "--passes", "forward_backward"],
}
# (label, allocator, extra environment)
SETTINGS = (
    ("system", "system", {}),
    ("system, output blocks off", "system", {"BENCHCTL_OUTPUT_BLOCKS_MIB": "0"}),
    ("jemalloc", "jemalloc", {}),
    ("tcmalloc", "tcmalloc", {}),
)


def measure(args: list[str], allocator: str, env: dict[str, str], rounds: int) -> dict:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "benchctl", "run", *args, "--rounds", str(rounds), "--allocator", allocator,
               "--out", out]
        subprocess.run(cmd, check=True, capture_output=True, text=True, env={**os.environ, **env})
        return storage.load(root=out).iloc[0].to_dict()


def ms(value) -> str:
    return "" if value is None or value != value else f"{value * 1e3:.3g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("| cell | allocator | median ms | modes ms (fast / slow) | round spread | page faults | sys ms |")
    print("|---|---|---|---|---|---|---|")
    for name, cell in CELLS.items():
        for label, allocator, env in SETTINGS:
            r = measure(cell, allocator, env, args.rounds)
            modes = f"{ms(r['mode_fast_s'])} / {ms(r['mode_slow_s'])}" if ms(r.get("mode_fast_s")) else ""
            print(f"| {name} | {label} | {ms(r['median_s'])} | {modes} | {r.get('round_spread') or 0:.2f} | "
                  f"{r.get('page_faults') or 0:.0f} | {ms(r.get('sys_s'))} |", flush=True)


if __name__ == "__main__":
    main()
