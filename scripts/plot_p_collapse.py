#!/usr/bin/env python3
"""Plots of the P-collapse study (tools/p_collapse_study) from its CSV.

  p_collapse_underflow.png  underflow of non-sink P vs the sink strength, measured dots on the
                            predicted curves (forward order; reverse order's in-block residue)
  p_collapse_mse.png        MSE of O against the FP64 oracle vs the sink strength, forward vs
                            reverse order, one line per S_p

Usage: plot_p_collapse.py docs/p_collapse.csv --out-dir docs
"""
import argparse
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

P_SCALES = [1.0, 16.0, 256.0, 448.0]
COLORS = {1.0: "tab:red", 16.0: "tab:orange", 256.0: "tab:blue", 448.0: "tab:green"}


def load(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            for key in ("delta", "realized_delta", "p_scale", "underflow", "predicted_leading",
                        "predicted_expected", "underflow_in_sink_block", "underflow_outside_sink_block", "mse"):
                r[key] = float(r[key])
            r["k_sink"] = int(r["k_sink"])
            r["sink_isolation"] = int(r["sink_isolation"])
            rows.append(r)
    return rows


def series(rows, **match):
    """Rows matching every field, sorted by Δ."""
    out = [r for r in rows if all(r[k] == v for k, v in match.items())]
    return sorted(out, key=lambda r: r["delta"])


def measured_source(p_scale):
    # The engine takes S_p = 2^0..2^8; 448 exists only in the FP64 cast-point emulation.
    return "emulation" if p_scale == 448.0 else "engine"


def plot_underflow(rows, k_sinks, path):
    fig, axes = plt.subplots(2, len(k_sinks), figsize=(5.2 * len(k_sinks), 8.5), squeeze=False)
    for col, k in enumerate(k_sinks):
        for row, order in enumerate(("forward", "reverse")):
            ax = axes[row][col]
            for sp in P_SCALES:
                s = series(rows, k_sink=k, kv_order=order, sink_isolation=0, p_scale=sp, source=measured_source(sp))
                if not s:
                    continue
                x = [r["realized_delta"] for r in s]
                ax.plot(x, [r["predicted_expected"] for r in s], "-", color=COLORS[sp], lw=1.6,
                        label=f"S_p={sp:g}: predicted (expectation)")
                ax.plot(x, [r["predicted_leading"] for r in s], ":", color=COLORS[sp], lw=1.0,
                        label=f"S_p={sp:g}: predicted (leading order)")
                marker = "s" if sp == 448.0 else "o"
                ax.plot(x, [r["underflow"] for r in s], marker, color=COLORS[sp], ms=4, mfc="none" if sp == 448.0 else COLORS[sp],
                        ls="none", label=f"S_p={sp:g}: measured" + (" (emulated cast)" if sp == 448.0 else ""))
                if order == "reverse":
                    iso = series(rows, k_sink=k, kv_order=order, sink_isolation=1, p_scale=sp, source=measured_source(sp))
                    ax.plot([r["realized_delta"] for r in iso], [r["underflow"] for r in iso], "x", color=COLORS[sp],
                            ms=4, ls="none", label=f"S_p={sp:g}: measured, sink isolation")
            ax.set_title(f"{order} KV order, k_sink = {k}")
            ax.set_xlabel("sink strength Δ (realized, natural-log units)")
            ax.set_ylabel("underflow fraction of non-sink P̃")
            ax.grid(alpha=0.3)
            if order == "reverse":
                ax.set_ylim(bottom=-0.002)
    handles, labels = axes[1][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle("P underflow in the E4M3 cast (engine telemetry) vs fp8attn_predict_p_underflow", fontsize=12)
    fig.tight_layout(rect=(0, 0.09, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_mse(rows, k_sinks, path):
    fig, axes = plt.subplots(1, len(k_sinks), figsize=(5.2 * len(k_sinks), 4.8), squeeze=False)
    for col, k in enumerate(k_sinks):
        ax = axes[0][col]
        for sp in P_SCALES:
            for order, style in (("forward", "-"), ("reverse", "--")):
                s = series(rows, k_sink=k, kv_order=order, sink_isolation=0, p_scale=sp, source=measured_source(sp))
                ax.plot([r["realized_delta"] for r in s], [r["mse"] for r in s], style, color=COLORS[sp], lw=1.4,
                        label=f"{order}, S_p={sp:g}" + (" (emulated)" if sp == 448.0 else ""))
        iso = series(rows, k_sink=k, kv_order="reverse", sink_isolation=1, p_scale=256.0, source="engine")
        ax.plot([r["realized_delta"] for r in iso], [r["mse"] for r in iso], ":", color="black", lw=1.2,
                label="reverse, S_p=256, sink isolation")
        ax.set_yscale("log")
        ax.set_title(f"k_sink = {k}")
        ax.set_xlabel("sink strength Δ (realized, natural-log units)")
        ax.set_ylabel("MSE of O vs FP64 oracle")
        ax.grid(alpha=0.3, which="both")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8, frameon=False)
    fig.suptitle("Output error vs sink strength: forward (solid) vs reverse (dashed) KV order", fontsize=12)
    fig.tight_layout(rect=(0, 0.1, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--out-dir", default=".")
    a = ap.parse_args()
    rows = load(a.csv)
    k_sinks = sorted({r["k_sink"] for r in rows})
    os.makedirs(a.out_dir, exist_ok=True)
    plot_underflow(rows, k_sinks, os.path.join(a.out_dir, "p_collapse_underflow.png"))
    plot_mse(rows, k_sinks, os.path.join(a.out_dir, "p_collapse_mse.png"))
    print("wrote", os.path.join(a.out_dir, "p_collapse_underflow.png"), "and", os.path.join(a.out_dir, "p_collapse_mse.png"))


if __name__ == "__main__":
    main()
