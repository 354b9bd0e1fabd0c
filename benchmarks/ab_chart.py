"""A bar chart of one pass's versions from the Markdown table hoconv2d_cuda_ab_bench.py prints, with the
floor (the pass's bytes at the calibrated copy bandwidth) as a line.

    python benchmarks/ab_chart.py benchmarks/hoconv2d_variants/ab-h100-machine1.txt --copy-gbps 2996 \\
        --pass backward --out benchmarks/figures/hoconv2d-cuda-backward-versions-h100.png
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROW = re.compile(r"^\| (\w+) \| (\d+) \| v(\d+) \| ([\d.]+) \| (\d+) \|")


def read(table: Path, pass_name: str) -> dict[int, list[tuple[int, float, float]]]:
    """batch -> [(version, ms, GB/s)] of `pass_name`."""
    rows: dict[int, list[tuple[int, float, float]]] = {}
    for line in table.read_text().splitlines():
        m = ROW.match(line)
        if m and m[1] == pass_name:
            rows.setdefault(int(m[2]), []).append((int(m[3]), float(m[4]), float(m[5])))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path)
    parser.add_argument("--copy-gbps", type=float, required=True, help="the GPU's calibrated copy bandwidth")
    parser.add_argument("--pass", dest="pass_name", default="backward")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = read(args.table, args.pass_name)
    fig, axes = plt.subplots(1, len(rows), figsize=(5 * len(rows), 3.6), squeeze=False)
    for ax, (batch, found) in zip(axes[0], sorted(rows.items())):
        versions, ms, gbs = zip(*found)
        ax.bar([f"v{v}" for v in versions], ms, color="tab:blue")
        floor_ms = ms[0] * gbs[0] / args.copy_gbps  # the pass's bytes at copy bandwidth
        ax.axhline(floor_ms, color="black", ls=":", label=f"floor at {args.copy_gbps:.0f} GB/s")
        for i, (t, g) in enumerate(zip(ms, gbs)):
            ax.text(i, t, f"{100 * g / args.copy_gbps:.0f}%", ha="center", va="bottom", fontsize=8)
        ax.set_title(f"B={batch}")
        ax.set_ylabel(f"{args.pass_name} median ms")
        ax.legend(loc="upper right", fontsize=8)
    fig.suptitle(f"hoconv2d CUDA {args.pass_name}, versions (share of copy bandwidth over each bar)")
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
