"""The copy rate by how much the copy holds, source and destination: where this machine's caches end in effect,
against the sizes the kernel reports and the copies `env --calibrate` times within each level
(copies.copy_sources).

    .venv/bin/python benchmarks/copy_sizes_bench.py [--repeats 2]

Prints, `--repeats` times, the GB/s of a copy (copies.copy_gbps: its median call over a window of 2 s)
holding 2 MiB to 512 MiB, then the sizes the calibration's level copies hold and the sizes it times between them
(copies.between_sources). Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse

from benchctl.measure import copies

MIB = 1 << 20
HELD_MIB = (2, 4, 8, 16, 32, 64, 128, 240, 512)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    print("levels (capacity for torch's threads):",
          ", ".join(f"{name} {size / MIB:.3g} MiB" for name, size in copies.level_bytes("cpu").items()))
    for _ in range(args.repeats):
        rates = [f"{held} MiB {copies.copy_gbps('cpu', held * MIB // 2):.1f}" for held in HELD_MIB]
        print("GB/s by bytes held:", ", ".join(rates), flush=True)
    print("calibration's level copies hold:",
          ", ".join(f"{name} {2 * size / MIB:.3g} MiB" for name, size in copies.copy_sources("cpu").items()))
    print("and its copies between them:",
          ", ".join(f"{2 * size / MIB:.3g} MiB" for size in copies.between_sources("cpu")))


if __name__ == "__main__":
    main()
