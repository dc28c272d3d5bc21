#!/usr/bin/env python3
"""The transient study: a synthetic attention layer runs 200 steps of random tokens with
‖x‖ ≤ B_X; at step 100 the projection weights are multiplied by 4 (a weight spike, as after a
checkpoint resume or a learning-rate spike). Delayed scaling (amax history, TransformerEngine's
recipe) and geometry-aware scaling (448 / (α·σ_max·B_X²/√d_h), σ from the spectral norms,
auto-α burn-in) each choose the FP8 logit scale; the study counts the steps whose scaled logits
leave E4M3's range (|S·scale| > 448) and reports the FP8 utilization max|S·scale| / 448.

Writes <out>/transient_study.csv and <out>/transient_study.png, and prints a table."""
import argparse
import csv
import os
import pathlib
import sys

import numpy as np

from fp8attn_scale_ctypes import FP8ATTN_RECIPE_DELAYED, FP8ATTN_RECIPE_GEOMETRY, Library, ScaleState

E4M3_MAX = 448.0


def realistic_weights(rows, d_model, rng, decay):
    """W = U·diag(s)·Vᵀ with random orthonormal U, V and s_i = exp(−i/decay) + 0.05: a few strong
    directions over a flat floor, as in trained projections."""
    u, _ = np.linalg.qr(rng.standard_normal((rows, rows)))
    v, _ = np.linalg.qr(rng.standard_normal((d_model, rows)))
    s = np.exp(-np.arange(rows) / decay) + 0.05
    return np.ascontiguousarray((u * s) @ v.T, dtype=np.float32)


def tokens(rng, count, d_model, bound, mean_direction):
    """Tokens with ‖x‖ ≤ B_X: a shared component (token embeddings share a mean direction) plus
    noise, scaled to a radius uniform in [0.5, 1]·B_X."""
    z = rng.standard_normal((count, d_model)) + 1.5 * mean_direction
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    return z * (bound * rng.uniform(0.5, 1.0, size=(count, 1)))


def max_abs_logit(x, wq, wk, heads, head_dim):
    q = x @ wq.T  # [tokens, heads·d_h]
    k = x @ wk.T
    worst = 0.0
    for h in range(heads):
        cols = slice(h * head_dim, (h + 1) * head_dim)
        s = q[:, cols] @ k[:, cols].T / np.sqrt(head_dim)
        worst = max(worst, float(np.abs(s).max()))
    return worst


def run(args):
    rng = np.random.default_rng(args.seed)
    d_model, heads, head_dim = args.d_model, args.heads, args.head_dim
    bound = float(np.sqrt(d_model))  # B_X of RMS-normalized tokens
    wq0 = realistic_weights(heads * head_dim, d_model, rng, decay=8.0)
    wk0 = realistic_weights(heads * head_dim, d_model, rng, decay=8.0)
    mean_direction = rng.standard_normal(d_model)
    mean_direction /= np.linalg.norm(mean_direction)

    library = Library(args.library)
    delayed = ScaleState(library, FP8ATTN_RECIPE_DELAYED, bound, -1)
    geometry = ScaleState(library, FP8ATTN_RECIPE_GEOMETRY, bound, args.burn_in)
    rows = []
    for step in range(args.steps):
        factor = args.spike if step >= args.spike_step else 1.0
        wq, wk = np.ascontiguousarray(wq0 * factor), np.ascontiguousarray(wk0 * factor)
        # Geometry-aware scaling refreshes σ from the current weights (warm-started, cheap).
        geometry.set_qk_weights(wq, wk, heads, heads, head_dim)
        x = tokens(rng, args.tokens, d_model, bound, mean_direction)
        amax = max_abs_logit(x, wq, wk, heads, head_dim)
        row = {"step": step, "weight_factor": factor, "max_abs_logit": amax}
        for name, state in (("delayed", delayed), ("geometry", geometry)):
            scale = state.logit_scale()  # chosen before this step's logits are seen
            scaled = amax * scale
            row[f"{name}_scale"] = scale
            row[f"{name}_max_scaled"] = scaled
            row[f"{name}_overflow"] = int(scaled > E4M3_MAX)
            state.report_logit_amax(amax)
            state.step()
        rows.append(row)
    for s in (delayed, geometry):
        s.close()
    library.close()
    return rows


def summarize(rows, spike_step):
    table = []
    for name in ("delayed", "geometry"):
        before = [r for r in rows if r["step"] < spike_step]
        after = [r for r in rows if r["step"] >= spike_step]
        over_before = [r["step"] for r in before if r[f"{name}_overflow"]]
        over_after = [r["step"] for r in after if r[f"{name}_overflow"]]
        table.append({
            "recipe": name,
            "overflow_before": len(over_before),
            "overflow_after": len(over_after),
            "first_after": over_after[0] if over_after else None,
            "util_before": float(np.mean([min(r[f"{name}_max_scaled"], E4M3_MAX) / E4M3_MAX for r in before])),
            "util_after": float(np.mean([min(r[f"{name}_max_scaled"], E4M3_MAX) / E4M3_MAX for r in after])),
            "peak_before": max(r[f"{name}_max_scaled"] for r in before) / E4M3_MAX,
            "peak_after": max(r[f"{name}_max_scaled"] for r in after) / E4M3_MAX,
        })
    return table


def write_outputs(rows, table, out_dir, spike_step):
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "transient_study.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    steps = [r["step"] for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for name, color in (("delayed", "tab:red"), ("geometry", "tab:blue")):
        top.semilogy(steps, [r[f"{name}_scale"] for r in rows], color=color, label=f"{name} scale")
        bottom.semilogy(steps, [r[f"{name}_max_scaled"] for r in rows], color=color, label=f"{name} max |S·scale|")
    bottom.axhline(E4M3_MAX, color="black", linestyle="--", label="E4M3 max 448")
    for ax in (top, bottom):
        ax.axvline(spike_step, color="gray", linestyle=":")
        ax.legend(loc="best", fontsize=8)
    top.set_ylabel("logit scale")
    bottom.set_ylabel("max |scaled logit|")
    bottom.set_xlabel("step (weights ×4 at the dotted line)")
    fig.suptitle("FP8 logit scale through a weight spike: delayed vs geometry-aware")
    fig.tight_layout()
    fig.savefig(out_dir / "transient_study.png", dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default=os.environ.get("FP8ATTN_LIBRARY"), help="path of libfp8attn.so")
    parser.add_argument("--out-dir", default="docs/results", type=pathlib.Path)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--spike-step", type=int, default=100)
    parser.add_argument("--spike", type=float, default=4.0)
    parser.add_argument("--burn-in", type=int, default=50, help="auto-alpha burn-in steps")
    parser.add_argument("--tokens", type=int, default=64, help="tokens per step")
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--head-dim", type=int, default=64)
    args = parser.parse_args()
    if not args.library:
        sys.exit("give --library or set FP8ATTN_LIBRARY")
    print(f"seed {args.seed}; d_model {args.d_model}, {args.heads} heads of {args.head_dim}; "
          f"{args.steps} steps, weights x{args.spike:g} at step {args.spike_step}; burn-in {args.burn_in}")
    rows = run(args)
    table = summarize(rows, args.spike_step)
    header = (f"{'recipe':<9} | {'overflow steps':>14} | {'overflow steps':>14} | {'first overflow':>14} | "
              f"{'utilization':>11} | {'utilization':>11} | {'peak/448':>8} | {'peak/448':>8}")
    sub = (f"{'':<9} | {'before spike':>14} | {'from spike':>14} | {'from spike':>14} | "
           f"{'before':>11} | {'from spike':>11} | {'before':>8} | {'from':>8}")
    print(header)
    print(sub)
    for t in table:
        first = "-" if t["first_after"] is None else str(t["first_after"])
        print(f"{t['recipe']:<9} | {t['overflow_before']:>14} | {t['overflow_after']:>14} | {first:>14} | "
              f"{t['util_before']:>11.3f} | {t['util_after']:>11.3f} | {t['peak_before']:>8.2f} | "
              f"{t['peak_after']:>8.2f}")
    print("utilization = mean over steps of min(max|S·scale|, 448)/448; peak = max over steps of max|S·scale|/448")
    write_outputs(rows, table, args.out_dir, args.spike_step)
    print(f"wrote {args.out_dir / 'transient_study.csv'} and {args.out_dir / 'transient_study.png'}")
    return table


if __name__ == "__main__":
    main()
