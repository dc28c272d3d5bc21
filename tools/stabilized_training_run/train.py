"""A small training run on the CPU: one or two causal attention layers (width 64 or 128, one head
as wide as the model) with residuals and a readout, trained for next-token prediction on sequences
that repeat tokens often (a sticky Markov chain over 32 tokens, no position embedding), so that
identical tokens give identical first-layer keys and tied row maxima. Attention runs on fp8attn's
CPU engine in BF16, forward AND backward (engine_attention.py; --backward fp64 restores the first
version's FP64 backward from the engine's O and LSE), once with the standard and once with the
stabilized softmax, from the same initialization and data.

At every step W_Q's gradient is also computed from the exact FP64 forward and backward (same BF16
q, k, v, same dO); δ is the engine's error and δ_fwd the part the forward puts in (the FP64
backward from the engine's O and LSE, minus the exact one). Per step and layer it records the
loss, the spectral norm ‖W_Q·W_Kᵀ‖₂ (fp8attn_qk_spectral_norms) and, for Δ = Σ δ: ‖Δ‖_F /
sqrt(Σ‖δ‖²_F), about 1 when the errors are random and growing like √t when they keep one
direction, and ‖Δ‖₂ / ‖Δ‖_F, 1 when Δ is rank one (the same growth ratio for Δ_fwd = Σ δ_fwd).
Writes <out>.csv and <out>.png (one row of panels per width and depth) and prints a summary."""
import argparse
import csv
import os
import pathlib
import sys

# NOTE: one BLAS thread. The matrices are small (128 × 128) and the machine is shared: OpenBLAS's
# threads spin-waited and made an SVD of 128 × 128 take 0.3 s instead of 5 ms.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bindings" / "python" / "src"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import fp8attn  # noqa: E402
from attention_math import tied_row_fraction  # noqa: E402
from engine_attention import EngineHead, ErrorAccumulator  # noqa: E402

# Adam's learning rate per width: the first run's choices (3e-3 trains width 64 without blowing
# up; width 128 needs 1e-2 to move ‖W_Q·W_Kᵀ‖₂ within 300 steps).
DEFAULT_LR = {64: 3e-3, 128: 1e-2}


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


def outer_sum(a, b):
    """Σ over batch and time of a_tᵀ·b_t: the weight gradient of a [batch, seq, dim] product."""
    return a.reshape(-1, a.shape[-1]).T @ b.reshape(-1, b.shape[-1])


def init_params(rng, vocab, d, layers):
    p = {"E": rng.normal(0, 1, (vocab, d))}
    for l in range(layers):
        for name in ("Wq", "Wk", "Wv", "Wo"):
            p[f"{name}{l}"] = rng.normal(0, d ** -0.5, (d, d))
    p["Wout"] = rng.normal(0, d ** -0.5, (d, vocab))
    return p


def train(args, width, layers, lr, variant, ctx):
    rng = np.random.default_rng(args.seed)
    chain = sticky_chain(rng, args.vocab, args.stay)
    d = width
    p = init_params(rng, args.vocab, d, layers)
    adam = {n: (np.zeros_like(w), np.zeros_like(w)) for n, w in p.items()}
    plan = fp8attn.Plan(ctx, input_dtype="bfloat16", output_dtype="bfloat16", head_dim=d, causal=True,
                        softmax_variant=variant)
    heads = [EngineHead(plan, args.backward == "engine") for _ in range(layers)]
    err = [ErrorAccumulator((d, d)) for _ in range(layers)]
    fwd_err = [ErrorAccumulator((d, d)) for _ in range(layers)]
    rows = []
    for step in range(args.steps):
        tokens = sample(rng, chain, args.batch, args.seq + 1)
        xs = [p["E"][tokens[:, :-1]]]  # the residual stream entering each layer, then the last
        os_ = []
        for l in range(layers):
            x = xs[-1]
            o = heads[l].forward(x @ p[f"Wq{l}"], x @ p[f"Wk{l}"], x @ p[f"Wv{l}"])
            os_.append(o)
            xs.append(x + o @ p[f"Wo{l}"])
        logits = xs[-1] @ p["Wout"]
        logits -= logits.max(axis=-1, keepdims=True)
        prob = np.exp(logits)
        prob /= prob.sum(axis=-1, keepdims=True)
        target = tokens[:, 1:]
        n = target.size
        loss = -np.log(prob.reshape(-1, args.vocab)[np.arange(n), target.reshape(-1)]).mean()
        d_logits = prob
        d_logits.reshape(-1, args.vocab)[np.arange(n), target.reshape(-1)] -= 1.0
        d_logits /= n
        g = {"Wout": outer_sum(xs[-1], d_logits)}
        d_x = d_logits @ p["Wout"].T
        for l in reversed(range(layers)):
            x = xs[l]
            g[f"Wo{l}"] = outer_sum(os_[l], d_x)
            (dq, dk, dv), dq_exact, dq_fwd = heads[l].backward(d_x @ p[f"Wo{l}"].T)
            g[f"Wq{l}"], g[f"Wk{l}"], g[f"Wv{l}"] = (outer_sum(x, t) for t in (dq, dk, dv))
            err[l].add(outer_sum(x, dq - dq_exact))
            fwd_err[l].add(outer_sum(x, dq_fwd - dq_exact))
            d_x = d_x + dq @ p[f"Wq{l}"].T + dk @ p[f"Wk{l}"].T + dv @ p[f"Wv{l}"].T
        g["E"] = np.zeros_like(p["E"])
        np.add.at(g["E"], tokens[:, :-1], d_x)
        for name, w in p.items():  # Adam
            m, s = adam[name]
            m[:] = 0.9 * m + 0.1 * g[name]
            s[:] = 0.999 * s + 0.001 * g[name] ** 2
            w -= lr * (m / (1 - 0.9 ** (step + 1))) / (np.sqrt(s / (1 - 0.999 ** (step + 1))) + 1e-8)
        row = {"width": width, "layers": layers, "variant": variant, "step": step, "loss": loss,
               "tied_rows": tied_row_fraction(*heads[0].inputs()[:2])}
        for l in range(layers):
            row[f"sigma_qk_{l}"] = float(fp8attn.qk_spectral_norms(p[f"Wq{l}"].T.astype(np.float32).copy(),
                                                                   p[f"Wk{l}"].T.astype(np.float32).copy(), 1, 1, d)[0])
            row[f"err_growth_{l}"], row[f"err_rank1_{l}"] = err[l].growth(), err[l].rank1()
            row[f"fwd_err_growth_{l}"] = fwd_err[l].growth()
            if step + 1 == args.fix_step:
                err[l].fix_direction()
            row[f"err_alignment_{l}"] = err[l].alignment()
            row[f"err_fro_{l}"] = float(np.linalg.norm(err[l].acc))
        rows.append(row)
    plan.close()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--widths", type=int, nargs="+", default=[64, 128], choices=(64, 128))
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 2], choices=(1, 2))
    ap.add_argument("--lr", type=float, default=None, help="Adam's learning rate (default: 3e-3 at width 64, "
                                                          "1e-2 at 128)")
    ap.add_argument("--backward", choices=("engine", "fp64"), default="engine",
                    help="the engine's BF16 backward, or FP64 from the engine's O and LSE")
    ap.add_argument("--vocab", type=int, default=32)
    ap.add_argument("--stay", type=float, default=0.5, help="probability that the next token repeats")
    ap.add_argument("--fix-step", type=int, default=50,
                    help="the step whose accumulated error's top singular pair is the fixed direction")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--out", default="stabilized_training_run")
    args = ap.parse_args()
    if "FP8ATTN_LIBRARY" not in os.environ:
        sys.exit("set FP8ATTN_LIBRARY to the path of libfp8attn.so")
    ctx = fp8attn.Context("cpu")
    runs = []  # (width, layers, lr, {variant: rows})
    for width in args.widths:
        for layers in args.layers:
            lr = args.lr if args.lr is not None else DEFAULT_LR[width]
            by_variant = {}
            for variant in ("standard", "stabilized"):
                if sys.stderr.isatty():
                    print(f"[fp8attn] training run: width {width}, {layers} layer(s), {variant} softmax, "
                          f"{args.steps} steps", file=sys.stderr)
                by_variant[variant] = train(args, width, layers, lr, variant, ctx)
            runs.append((width, layers, lr, by_variant))
    rows = [r for run in runs for v in run[3].values() for r in v]
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(f"{args.out}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    plot(runs, f"{args.out}.png", args.fix_step)
    print(f"seq {args.seq}, batch {args.batch}, vocab {args.vocab}, stay {args.stay}, {args.steps} steps, "
          f"seed {args.seed}, {args.backward} backward; Δ, Δ_fwd: W_Q's accumulated gradient error, all and the "
          f"forward's part; per layer l0 / l1")
    print("| width | layers | lr | softmax | rows with a tied max | loss first → last | ‖W_Q·W_Kᵀ‖₂ first → last (max) |"
          f" ‖Δ‖_F/√Σ‖δ‖² | ‖Δ_fwd‖_F/√Σ‖δ_fwd‖² | ‖Δ‖₂/‖Δ‖_F | alignment with step {args.fix_step}'s direction |")
    print("|---:|---:|---:|---|---:|---|---|---:|---:|---:|---:|")
    for width, layers, lr, by_variant in runs:
        for variant, r in by_variant.items():
            per_layer = lambda f: " / ".join(f(l) for l in range(layers))  # noqa: E731
            sigma = per_layer(lambda l: f"{r[0][f'sigma_qk_{l}']:.2f} → {r[-1][f'sigma_qk_{l}']:.2f} "
                                        f"({max(x[f'sigma_qk_{l}'] for x in r):.2f})")
            print(f"| {width} | {layers} | {lr:g} | {variant} | {np.mean([x['tied_rows'] for x in r]):.1%} | "
                  f"{r[0]['loss']:.3f} → {r[-1]['loss']:.3f} | {sigma} | "
                  f"{per_layer(lambda l: format(r[-1][f'err_growth_{l}'], '.1f'))} | "
                  f"{per_layer(lambda l: format(r[-1][f'fwd_err_growth_{l}'], '.1f'))} | "
                  f"{per_layer(lambda l: format(r[-1][f'err_rank1_{l}'], '.2f'))} | "
                  f"{per_layer(lambda l: format(r[-1][f'err_alignment_{l}'], '.2f'))} |")
    print(f"wrote {args.out}.csv and {args.out}.png")


def plot(runs, path, fix_step):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 4, figsize=(16, 3.0 * len(runs)), squeeze=False)
    for (width, layers, lr, by_variant), ax in zip(runs, axes):
        for variant, color in (("standard", "tab:red"), ("stabilized", "tab:blue")):
            r = by_variant[variant]
            steps = [x["step"] for x in r]
            ax[0].plot(steps, [x["loss"] for x in r], color=color, label=variant)
            for l, style in zip(range(layers), ("-", "--")):
                ax[1].plot(steps, [x[f"sigma_qk_{l}"] for x in r], color=color, linestyle=style,
                           label=f"{variant}, layer {l}")
                ax[2].plot(steps, [x[f"err_growth_{l}"] for x in r], color=color, linestyle=style,
                           label=f"{variant}, layer {l}")
                ax[3].plot(steps, [x[f"err_alignment_{l}"] for x in r], color=color, linestyle=style,
                           label=f"{variant}, layer {l}")
            ax[2].plot(steps, [x["fwd_err_growth_0"] for x in r], color=color, linestyle=":", alpha=0.6,
                       label=f"{variant}, forward's part, layer 0")
        ax[2].plot(steps, np.sqrt(np.arange(1, len(steps) + 1)), color="gray", linestyle=":", label="√t (one direction)")
        titles = ("loss", "‖W_Q·W_Kᵀ‖₂", "‖Σδ‖_F / √Σ‖δ‖²_F (W_Q's gradient error)",
                  f"|uᵀ(Σδ)v| / ‖Σδ‖_F, (u, v) fixed at step {fix_step}")
        for a, title in zip(ax, titles):
            a.set_title(f"width {width}, {layers} layer{'s' if layers > 1 else ''}: {title}", fontsize=9)
            a.set_xlabel("step")
            a.legend(fontsize=6)
    fig.suptitle("BF16 engine forward and backward, standard against stabilized softmax", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


if __name__ == "__main__":
    main()
