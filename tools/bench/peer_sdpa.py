#!/usr/bin/env python3
"""The CPU engine against PyTorch's CPU scaled_dot_product_attention, on the same cores in one run.

Not part of CI (it needs torch from PyPI). For each head_dim and mask it times
torch.nn.functional.scaled_dot_product_attention in F32 and in BF16 (PyTorch's CPU flash-attention
kernel), then runs bench_engine_vs_sgemm on the same shape (batch 1, 4 heads, 4096 tokens) and
reads the engine's GFLOP/s from its table. FLOPs are 4·heads·S²·d, halved for causal masks, for
every column, so the ratios compare times.

    python3 tools/bench/peer_sdpa.py --bench build/tools/bench/bench_engine_vs_sgemm
"""
import argparse
import re
import statistics
import subprocess
import time

import torch


def sdpa_gflops(head_dim: int, seqlen: int, heads: int, causal: bool, dtype: torch.dtype, reps: int) -> float:
    gen = torch.Generator().manual_seed(head_dim * 7 + int(causal))
    q, k, v = (torch.randn(1, heads, seqlen, head_dim, generator=gen).to(dtype) for _ in range(3))
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)  # warm-up
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        times.append(time.perf_counter() - start)
    flops = 4.0 * heads * seqlen * seqlen * head_dim * (0.5 if causal else 1.0)
    return flops / statistics.median(times) * 1e-9


def engine_gflops(bench: str, reps: int) -> dict:
    """GFLOP/s of every BM_engine row of one bench run, keyed by (head_dim, dtype, causal)."""
    out = subprocess.run([bench, "--benchmark_filter=BM_engine|BM_sgemm", f"--benchmark_repetitions={reps}",
                          "--benchmark_min_time=0.5"],
                         check=True, capture_output=True, text=True).stdout
    table = {}
    for m in re.finditer(r"^BM_engine/(\d+)/\d+/(\d+)/(\d+)\S*\s+\d+\s+([\d.]+)", out, re.M):
        table[(int(m[1]), int(m[2]), int(m[3]))] = float(m[4])
    sgemm = re.search(r"OpenBLAS sgemm ([\d.]+) GFLOP/s", out)
    table["sgemm"] = float(sgemm[1]) if sgemm else float("nan")
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True, help="path to bench_engine_vs_sgemm")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    seqlen, heads = 4096, 4
    engine = engine_gflops(args.bench, args.reps)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; OpenBLAS sgemm {engine['sgemm']:.1f} GFLOP/s "
          f"(engine bench run); batch 1, {heads} heads, {seqlen} tokens; GFLOP/s")
    print(f"{'head_dim':>8} {'causal':>6} {'engine E4M3':>11} {'engine BF16':>11} {'SDPA F32':>9} {'SDPA BF16':>9}"
          f" {'E4M3/best SDPA':>14} {'BF16/best SDPA':>14}")
    for head_dim in (64, 128, 256):
        for causal in (0, 1):
            f32 = sdpa_gflops(head_dim, seqlen, heads, bool(causal), torch.float32, args.reps)
            bf16 = sdpa_gflops(head_dim, seqlen, heads, bool(causal), torch.bfloat16, args.reps)
            e4m3 = engine.get((head_dim, 5, causal), float("nan"))
            ebf16 = engine.get((head_dim, 3, causal), float("nan"))
            best = max(f32, bf16)
            print(f"{head_dim:>8} {causal:>6} {e4m3:>11.1f} {ebf16:>11.1f} {f32:>9.1f} {bf16:>9.1f}"
                  f" {e4m3 / best:>14.2f} {ebf16 / best:>14.2f}")


if __name__ == "__main__":
    main()
