#!/usr/bin/env python3
"""Plots of the P-collapse study (tools/p_collapse_study) from its CSV.

  p_collapse_underflow.png  underflow of non-sink P vs the sink strength, measured dots on the
                            predicted curves (forward order; reverse order's in-block residue)
  p_collapse_mse.png        MSE of O against the FP64 oracle vs the sink strength, forward vs
                            reverse order, one line per S_p
  p_collapse_summary.md     the tables of docs/p_collapse.md (excerpts of the CSV)

Usage: plot_p_collapse.py docs/results/p_collapse.csv --out-dir docs/results
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


def fmt(x):
    return f"{x:.4f}"


def summary(rows, k_sinks):
    """Markdown tables: forward-order agreement, reverse-order attribution, MSE ratios, and the
    emulation's agreement with the engine."""
    out = []
    show = [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0]
    out.append("### Forward order: measured underflow of non-sink P̃ (predicted expectation)\n")
    out.append("| k_sink | Δ (realized) | " + " | ".join(f"S_p = {sp:g}" for sp in P_SCALES) + " |")
    out.append("|---:|---:|" + "---:|" * len(P_SCALES))
    for k in k_sinks:
        for d in show:
            cells, realized = [], None
            for sp in P_SCALES:
                s = [r for r in series(rows, k_sink=k, kv_order="forward", sink_isolation=0, p_scale=sp,
                                       source=measured_source(sp)) if r["delta"] == d]
                if s:
                    realized = s[0]["realized_delta"]
                    cells.append(f"{fmt(s[0]['underflow'])} ({fmt(s[0]['predicted_expected'])})")
                else:
                    cells.append("")
            if realized is not None:
                out.append(f"| {k} | {realized:.3f} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("Largest |measured − expectation| over the whole sweep, forward order, per k_sink and S_p "
               "(in units of the per-row standard error, stddev/√rows, in parentheses):\n")
    out.append("| k_sink | " + " | ".join(f"S_p = {sp:g}" for sp in P_SCALES) + " |")
    out.append("|---:|" + "---:|" * len(P_SCALES))
    for k in k_sinks:
        cells = []
        for sp in P_SCALES:
            s = series(rows, k_sink=k, kv_order="forward", sink_isolation=0, p_scale=sp, source=measured_source(sp))
            worst = max(s, key=lambda r: abs(r["underflow"] - r["predicted_expected"]))
            gap = worst["underflow"] - worst["predicted_expected"]
            se = float(worst["underflow_row_stddev"]) / float(worst["rows"]) ** 0.5 if worst.get("rows") else None
            cells.append(f"{gap:+.4f} at Δ={worst['realized_delta']:.2f}" + (f" ({abs(gap) / se:.1f} SE)" if se else ""))
        out.append(f"| {k} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("### Reverse order, S_p = 256: where the non-sink P̃ underflow\n")
    out.append("| k_sink | Δ (realized) | in the sink's block | predicted residue | outside it (count) "
               "| with sink isolation (count) |")
    out.append("|---:|---:|---:|---:|---:|---:|")
    for k in k_sinks:
        for d in [8.0, 10.0, 12.0, 14.0, 16.0]:
            s = [r for r in series(rows, k_sink=k, kv_order="reverse", sink_isolation=0, p_scale=256.0,
                                   source="engine") if r["delta"] == d]
            iso = [r for r in series(rows, k_sink=k, kv_order="reverse", sink_isolation=1, p_scale=256.0,
                                     source="engine") if r["delta"] == d]
            if s and iso:
                r = s[0]
                out.append(f"| {k} | {r['realized_delta']:.3f} | {r['underflow_in_sink_block']:.5f} | "
                           f"{r['predicted_expected']:.5f} | {r['count_outside_sink_block']} | "
                           f"{int(float(iso[0]['count_in_sink_block'])) + int(float(iso[0]['count_outside_sink_block']))} |")
    out.append("")
    out.append("### MSE of O: forward order at S_p = 1 over reverse order at S_p = 256\n")
    ratio_deltas = [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 12.0, 16.0]
    out.append("| k_sink | " + " | ".join(f"Δ={d:g}" for d in ratio_deltas) + " |")
    out.append("|---:|" + "---:|" * len(ratio_deltas))
    for k in k_sinks:
        cells = []
        for d in ratio_deltas:
            f = [r for r in series(rows, k_sink=k, kv_order="forward", sink_isolation=0, p_scale=1.0, source="engine")
                 if r["delta"] == d]
            b = [r for r in series(rows, k_sink=k, kv_order="reverse", sink_isolation=0, p_scale=256.0,
                                   source="engine") if r["delta"] == d]
            cells.append(f"{f[0]['mse'] / b[0]['mse']:.2f}" if f and b else "")
        out.append(f"| {k} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("(Δ here is the requested value; the realized values are in the CSV.)\n")
    out.append("### The S_p = 448 emulation against the engine (S_p = 1, 16, 256; every point of the sweep)\n")
    by_key = {}
    for r in rows:
        if r["p_scale"] != 448.0:
            by_key.setdefault((r["k_sink"], r["delta"], r["p_scale"], r["kv_order"], r["sink_isolation"]), {})[
                r["source"]] = r
    du, dm, n = 0.0, 0.0, 0
    for pair in by_key.values():
        if "engine" in pair and "emulation" in pair:
            e, m = pair["engine"], pair["emulation"]
            du = max(du, abs(e["underflow"] - m["underflow"]))
            dm = max(dm, abs(e["mse"] - m["mse"]) / e["mse"])
            n += 1
    out.append(f"Over {n} (k_sink, Δ, S_p, order, isolation) points: largest |underflow difference| {du:.2e}, "
               f"largest relative MSE difference {dm:.2e}.\n")
    return "\n".join(out)


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
    with open(os.path.join(a.out_dir, "p_collapse_summary.md"), "w") as f:
        f.write("<!-- Generated by scripts/plot_p_collapse.py from p_collapse.csv. -->\n\n" + summary(rows, k_sinks) + "\n")
    print("wrote", os.path.join(a.out_dir, "p_collapse_underflow.png"), "and", os.path.join(a.out_dir, "p_collapse_mse.png"))


if __name__ == "__main__":
    main()
