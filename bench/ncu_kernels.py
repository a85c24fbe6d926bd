#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Kernel times of one design iteration from Nsight Compute's CSV.

    ncu_kernels.py NCU.csv MARK

NCU.csv: `ncu --csv --metrics gpu__time_duration.sum ...`'s log, one row a
kernel launch in launch order. MARK: part of the name of the kernel that
opens each design iteration (the EFG loop's assembly: assemble_rows_kernel).
Prints a markdown table of the last whole design iteration (from the
second-last launch of MARK to the last): per kernel and launch shape its
launches, its microseconds in all and a launch, largest first, and the
sum. The standard library only (the GPU machine's python3)."""
import csv
import re
import sys

UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}


def launches(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    head = next(k for k, r in enumerate(rows) if r and r[0] == "ID")
    names = rows[head]
    col = {n: names.index(n) for n in ("Kernel Name", "Grid Size", "Block Size",
                                       "Metric Unit", "Metric Value")}
    for r in rows[head + 1:]:
        if len(r) <= col["Metric Value"]:
            continue
        name = re.sub(r"^void ", "", r[col["Kernel Name"]])
        name = re.sub(r"[(<].*", "", name)
        micros = float(r[col["Metric Value"]].replace(",", "")) * UNITS[r[col["Metric Unit"]]]
        yield name, r[col["Grid Size"]], r[col["Block Size"]], micros


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    seq = list(launches(sys.argv[1]))
    marks = [k for k, s in enumerate(seq) if sys.argv[2] in s[0]]
    if len(marks) < 2:
        sys.exit(f"{sys.argv[1]}: fewer than two launches of {sys.argv[2]}: no whole design iteration")
    total = {}
    for name, grid, block, micros in seq[marks[-2]:marks[-1]]:
        n, t = total.get((name, grid, block), (0, 0.0))
        total[(name, grid, block)] = (n + 1, t + micros)
    print("| kernel | grid | block | launches | µs in all | µs a launch |")
    print("|---|---|---|---|---|---|")
    for (name, grid, block), (n, t) in sorted(total.items(), key=lambda kv: -kv[1][1]):
        print(f"| {name[:60]} | {grid} | {block} | {n} | {t:.1f} | {t / n:.1f} |")
    print(f"| all | | | {sum(n for n, _ in total.values())} | "
          f"{sum(t for _, t in total.values()):.1f} | |")


if __name__ == "__main__":
    main()
