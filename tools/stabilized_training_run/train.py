"""A small training run on the CPU: one causal attention layer (width 64, one head of 64) with a
residual and a readout, trained for next-token prediction on sequences that repeat tokens often
(a sticky Markov chain over 32 tokens, no position embedding), so that identical tokens give
identical keys and tied row maxima. The attention forward is fp8attn's CPU engine on BF16 inputs
with a BF16 output, once with the standard and once with the stabilized softmax, from the same
initialization and data. The backward is FlashAttention's, in FP64 from the engine's O and LSE
(attention_math.py), so the forward's rounding reaches the gradients the way it does in training:
through D = rowsum(dO∘O). At every step the gradient of W_Q is also computed from the exact FP64
forward; their difference δ is the error the forward's arithmetic puts into the update.

Per step it records the loss, the spectral norm ‖W_Q·W_Kᵀ‖₂ (fp8attn_qk_spectral_norms) and the
accumulated gradient error Δ = Σ δ: ‖Δ‖_F / sqrt(Σ‖δ‖²_F) is about 1 when the errors are random
and grows like √t when they keep one direction; ‖Δ‖₂ / ‖Δ‖_F is 1 when Δ is rank one.
Writes <out>.csv and <out>.png and prints a summary."""
import argparse
import csv
import os
import pathlib
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bindings" / "python" / "src"))
import fp8attn  # noqa: E402
from attention_math import backward, forward, tied_row_fraction  # noqa: E402

BF16 = ml_dtypes.bfloat16


def sticky_chain(rng, vocab, stay):
    """Transition matrix: stay on the token with probability `stay`, else a few favoured next tokens."""
    t = rng.dirichlet(np.full(vocab, 0.1), size=vocab) * (1.0 - stay)
    t[np.arange(vocab), np.arange(vocab)] += stay
    return t / t.sum(axis=1, keepdims=True)


def sample(rng, chain, batch, length):
    x = np.empty((batch, length), dtype=np.int64)
    x[:, 0] = rng.integers(0, chain.shape[0], batch)
    for i in range(1, length):
        u = rng.random(batch)[:, None]
        x[:, i] = (np.cumsum(chain[x[:, i - 1]], axis=1) < u).sum(axis=1).clip(max=chain.shape[0] - 1)
    return x


def train(args, variant, plan_ctx):
    rng = np.random.default_rng(args.seed)
    chain = sticky_chain(rng, args.vocab, args.stay)
    d = args.width
    p = {"E": rng.normal(0, 1, (args.vocab, d)), "Wq": rng.normal(0, d ** -0.5, (d, d)),
         "Wk": rng.normal(0, d ** -0.5, (d, d)), "Wv": rng.normal(0, d ** -0.5, (d, d)),
         "Wo": rng.normal(0, d ** -0.5, (d, d)), "Wout": rng.normal(0, d ** -0.5, (d, args.vocab))}
    adam = {n: (np.zeros_like(w), np.zeros_like(w)) for n, w in p.items()}
    plan = fp8attn.Plan(plan_ctx, input_dtype="bfloat16", output_dtype="bfloat16", head_dim=d, causal=True,
                        softmax_variant=variant)
    acc_err = np.zeros((d, d))
    sum_sq_err = 0.0
    rows = []
    for step in range(args.steps):
        tokens = sample(rng, chain, args.batch, args.seq + 1)
        x = p["E"][tokens[:, :-1]]
        q, k, v = x @ p["Wq"], x @ p["Wk"], x @ p["Wv"]
        qb, kb, vb = (a.astype(BF16) for a in (q, k, v))
        out, lse = plan.forward(qb[:, :, None, :], kb[:, :, None, :], vb[:, :, None, :], return_lse=True)
        o = np.asarray(out, dtype=np.float64)[:, :, 0, :]
        lse = np.asarray(lse, dtype=np.float64)[:, 0, :]
        h = x + o @ p["Wo"]
        logits = h @ p["Wout"]
        logits -= logits.max(axis=-1, keepdims=True)
        prob = np.exp(logits)
        prob /= prob.sum(axis=-1, keepdims=True)
        target = tokens[:, 1:]
        n = target.size
        loss = -np.log(prob.reshape(-1, args.vocab)[np.arange(n), target.reshape(-1)]).mean()
        d_logits = prob
        d_logits.reshape(-1, args.vocab)[np.arange(n), target.reshape(-1)] -= 1.0
        d_logits /= n
        g = {"Wout": np.einsum("bti,btj->ij", h, d_logits)}
        d_h = d_logits @ p["Wout"].T
        g["Wo"] = np.einsum("bti,btj->ij", o, d_h)
        d_o = d_h @ p["Wo"].T
        qf, kf, vf = (a.astype(np.float64) for a in (qb, kb, vb))
        dq, dk, dv = backward(qf, kf, vf, o, lse, d_o)
        o_exact, lse_exact = forward(qf, kf, vf)
        dq_exact, _, _ = backward(qf, kf, vf, o_exact, lse_exact, d_o)
        g["Wq"], g["Wk"], g["Wv"] = (np.einsum("bti,btj->ij", x, t) for t in (dq, dk, dv))
        delta = np.einsum("bti,btj->ij", x, dq - dq_exact)
        acc_err += delta
        sum_sq_err += float((delta ** 2).sum())
        d_x = d_h + dq @ p["Wq"].T + dk @ p["Wk"].T + dv @ p["Wv"].T
        g["E"] = np.zeros_like(p["E"])
        np.add.at(g["E"], tokens[:, :-1], d_x)
        for name, w in p.items():  # Adam
            m, s = adam[name]
            m[:] = 0.9 * m + 0.1 * g[name]
            s[:] = 0.999 * s + 0.001 * g[name] ** 2
            w -= args.lr * (m / (1 - 0.9 ** (step + 1))) / (np.sqrt(s / (1 - 0.999 ** (step + 1))) + 1e-8)
        sigma = fp8attn.qk_spectral_norms(p["Wq"].T.astype(np.float32).copy(), p["Wk"].T.astype(np.float32).copy(),
                                          1, 1, d)[0]
        fro = np.linalg.norm(acc_err)
        rows.append({"variant": variant, "step": step, "loss": loss, "sigma_qk": float(sigma),
                     "tied_rows": tied_row_fraction(qf, kf),
                     "acc_err_growth": fro / max(np.sqrt(sum_sq_err), 1e-300),
                     "acc_err_rank1": np.linalg.norm(acc_err, 2) / max(fro, 1e-300), "acc_err_fro": fro})
    plan.close()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--width", type=int, default=64, choices=(64, 128))
    ap.add_argument("--vocab", type=int, default=32)
    ap.add_argument("--stay", type=float, default=0.5, help="probability that the next token repeats")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--out", default="stabilized_training_run")
    args = ap.parse_args()
    if "FP8ATTN_LIBRARY" not in os.environ:
        sys.exit("set FP8ATTN_LIBRARY to the path of libfp8attn.so")
    ctx = fp8attn.Context("cpu")
    rows = []
    for variant in ("standard", "stabilized"):
        if sys.stderr.isatty():
            print(f"[fp8attn] training run: {variant} softmax, {args.steps} steps", file=sys.stderr)
        rows += train(args, variant, ctx)
    with open(f"{args.out}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    plot(rows, f"{args.out}.png")
    print(f"width {args.width}, seq {args.seq}, batch {args.batch}, vocab {args.vocab}, stay {args.stay}, "
          f"lr {args.lr}, {args.steps} steps, seed {args.seed}")
    print("| softmax | rows with a tied max | loss first → last | ‖W_Q·W_Kᵀ‖₂ first → last (max) | ‖Δ‖_F/√Σ‖δ‖² |"
          " ‖Δ‖₂/‖Δ‖_F |")
    print("|---|---:|---|---|---:|---:|")
    for variant in ("standard", "stabilized"):
        r = [x for x in rows if x["variant"] == variant]
        print(f"| {variant} | {np.mean([x['tied_rows'] for x in r]):.1%} | {r[0]['loss']:.3f} → {r[-1]['loss']:.3f} | {r[0]['sigma_qk']:.2f} → "
              f"{r[-1]['sigma_qk']:.2f} ({max(x['sigma_qk'] for x in r):.2f}) | {r[-1]['acc_err_growth']:.1f} | "
              f"{r[-1]['acc_err_rank1']:.2f} |")
    print(f"wrote {args.out}.csv and {args.out}.png")


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for variant, color in (("standard", "tab:red"), ("stabilized", "tab:blue")):
        r = [x for x in rows if x["variant"] == variant]
        steps = [x["step"] for x in r]
        axes[0].plot(steps, [x["loss"] for x in r], color=color, label=variant)
        axes[1].plot(steps, [x["sigma_qk"] for x in r], color=color, label=variant)
        axes[2].plot(steps, [x["acc_err_growth"] for x in r], color=color, label=variant)
    axes[2].plot(steps, np.sqrt(np.arange(1, len(steps) + 1)), color="gray", linestyle=":", label="√t (one direction)")
    for ax, title in zip(axes, ("loss", "‖W_Q·W_Kᵀ‖₂", "‖Σδ‖_F / √Σ‖δ‖²_F")):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("step")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
