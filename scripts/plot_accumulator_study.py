#!/usr/bin/env python3
"""Plot of the accumulator study (tools/accumulator_study) from its CSV: accumulator_study.png.

Left: RMSE of O against the FP64 oracle vs the number of keys. Right: the error the modelled
accumulator adds on its own (RMSE against the same forward with a full FP32 accumulator).
Each point is the mean over the CSV's seeds.

Usage: plot_accumulator_study.py docs/results/accumulator_study.csv --out-dir docs/results
"""
import argparse
import csv
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

INTERVAL_COLORS = {0: "tab:red", 1: "tab:blue", 2: "tab:cyan", 4: "tab:green", 8: "tab:olive", 16: "tab:orange",
                   32: "tab:purple", 64: "tab:brown"}
BITS_STYLES = {13: "-", 14: "--", 22: ":"}


def load(path):
    """{(bits, interval): {seqlen: [(rmse, added), ...]}}"""
    data = defaultdict(lambda: defaultdict(list))
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (int(r["accumulator_bits"]), int(r["promote_interval"]))
            data[key][int(r["seqlen_k"])].append((float(r["rmse"]), float(r["rmse_vs_fp32_accumulator"])))
    return data


def mean_curve(points, index):
    seqlens = sorted(points)
    return seqlens, [sum(p[index] for p in points[s]) / len(points[s]) for s in seqlens]


def label(bits, interval):
    if bits == 0:
        return "FP32 accumulator"
    every = "never promoted" if interval == 0 else f"promoted every {interval} block" + ("s" if interval > 1 else "")
    return f"{bits}-bit model, {every}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--out-dir", default=".")
    a = ap.parse_args()
    data = load(a.csv)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.5, 5.2))
    for (bits, interval), points in sorted(data.items()):
        if bits == 0:
            x, y = mean_curve(points, 0)
            left.plot(x, y, "-o", color="0.55", lw=4, ms=7, label=label(bits, interval), zorder=1)
            continue
        style = dict(color=INTERVAL_COLORS.get(interval, "gray"), ls=BITS_STYLES.get(bits, ":"), marker="o", ms=4)
        x, y = mean_curve(points, 0)
        left.plot(x, y, lw=1.4, label=label(bits, interval), **style)
        x, y = mean_curve(points, 1)
        right.plot(x, y, lw=1.4, label=label(bits, interval), **style)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("keys (seqlen_k)")
        ax.grid(alpha=0.3, which="both")
    left.set_ylabel("RMSE of O vs FP64 oracle")
    left.set_title("Total error (P cast + accumulator)")
    right.set_ylabel("RMSE vs the same forward with an FP32 accumulator")
    right.set_title("Error added by the modelled accumulator")
    left.legend(fontsize=8)
    fig.suptitle("FP8 tensor-core accumulator model (truncation to M mantissa bits) and PV promotion", fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    os.makedirs(a.out_dir, exist_ok=True)
    path = os.path.join(a.out_dir, "accumulator_study.png")
    fig.savefig(path, dpi=110)
    print("wrote", path)


if __name__ == "__main__":
    main()
