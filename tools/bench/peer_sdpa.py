#!/usr/bin/env python3
"""The CPU engine against PyTorch's CPU scaled_dot_product_attention, on the same cores in one run.

Not part of CI (it needs torch from PyPI). For each head_dim and mask it times
torch.nn.functional.scaled_dot_product_attention in F32 and in BF16 (PyTorch's CPU flash-attention
kernel), then runs bench_engine_vs_sgemm on the same shape (batch 1, 4 heads, 4096 tokens) and
reads the engine's GFLOP/s from its table, in both accumulation modes (FP32: the products as FP32
chunk sums; tensor core: the tensor core's exact addition, the default). FLOPs are 4·heads·S²·d,
halved for causal masks, for every column, so the ratios compare times.

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
    """GFLOP/s of every BM_engine row of one bench run, keyed by (head_dim, dtype, causal, accumulator)."""
    out = subprocess.run([bench, "--benchmark_filter=BM_engine|BM_sgemm", f"--benchmark_repetitions={reps}",
                          "--benchmark_min_time=0.5"],
                         check=True, capture_output=True, text=True).stdout
    table = {}
    # NOTE: the accumulator is part of the key: without it the two modes' rows overwrote each other.
    for m in re.finditer(r"^BM_engine/(\d+)/\d+/(\d+)/(\d+)/(\d+)\S*\s+\d+\s+([\d.]+)", out, re.M):
        table[(int(m[1]), int(m[2]), int(m[3]), int(m[4]))] = float(m[5])
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
    print("engine FP32 = FP32 accumulation, TC = the tensor core's addition; ratios against SDPA F32")
    print(f"{'head_dim':>8} {'causal':>6} {'E4M3 FP32':>9} {'BF16 FP32':>9} {'E4M3 TC':>8} {'BF16 TC':>8}"
          f" {'SDPA F32':>9} {'SDPA BF16':>9} {'E4M3 FP32/SDPA':>14} {'BF16 FP32/SDPA':>14} {'E4M3 TC/SDPA':>12}")
    for head_dim in (64, 128, 256):
        for causal in (0, 1):
            f32 = sdpa_gflops(head_dim, seqlen, heads, bool(causal), torch.float32, args.reps)
            bf16 = sdpa_gflops(head_dim, seqlen, heads, bool(causal), torch.bfloat16, args.reps)
            nan = float("nan")
            e4m3, ebf16 = engine.get((head_dim, 5, causal, 0), nan), engine.get((head_dim, 3, causal, 0), nan)
            e4m3_tc, ebf16_tc = engine.get((head_dim, 5, causal, 1), nan), engine.get((head_dim, 3, causal, 1), nan)
            print(f"{head_dim:>8} {causal:>6} {e4m3:>9.1f} {ebf16:>9.1f} {e4m3_tc:>8.1f} {ebf16_tc:>8.1f}"
                  f" {f32:>9.1f} {bf16:>9.1f} {e4m3 / f32:>14.2f} {ebf16 / f32:>14.2f} {e4m3_tc / f32:>12.2f}")


if __name__ == "__main__":
    main()
