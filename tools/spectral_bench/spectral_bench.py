#!/usr/bin/env python3
"""Speed of fp8attn_qk_spectral_norms against numpy/LAPACK SVD of the explicitly formed d × d
products, at Llama-like GQA shapes (d_model 4096, 32 query heads, 8 KV heads, d_h 128), in one
run. Both sides run on this machine's cores: the library on its context's threads and
OpenBLAS's, numpy on OpenBLAS's.

The SVD of one 4096 × 4096 product takes about a minute on two cores, so by default the SVD is
timed on --svd-heads heads and its per-head time is multiplied by 32 (every head needs its own
SVD); --svd-heads 32 times them all. The ratio is numpy's time for all 32 heads over the
library's time for all 32 heads. "Equal accuracy": the library's σ must agree with the SVD's
to 1e-4 relative on every timed head, and the run fails otherwise."""
import argparse
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "spectral"))
from fp8attn_spectral_ctypes import Spectral  # noqa: E402

D_MODEL, HEADS_Q, HEADS_KV, HEAD_DIM = 4096, 32, 8, 128


def decaying_weights(rows, rng, rank=256):
    """W = A·diag(s)·B/√d + small noise with s_i = exp(−i/48): a decaying, trained-like spectrum."""
    a = rng.standard_normal((rows, rank), dtype=np.float32)
    b = rng.standard_normal((rank, D_MODEL), dtype=np.float32)
    s = np.exp(-np.arange(rank, dtype=np.float32) / 48.0)
    w = (a * s) @ b / np.float32(np.sqrt(D_MODEL))
    w += np.float32(0.01) * rng.standard_normal((rows, D_MODEL), dtype=np.float32)
    return np.ascontiguousarray(w, dtype=np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default=os.environ.get("FP8ATTN_LIBRARY"), help="path of libfp8attn.so")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--svd-heads", type=int, default=2, help="heads whose formed product is SVD-timed")
    parser.add_argument("--repeats", type=int, default=5, help="library runs; the median is reported")
    args = parser.parse_args()
    if not args.library:
        sys.exit("give --library or set FP8ATTN_LIBRARY")
    os.environ["FP8ATTN_LIBRARY"] = args.library

    rng = np.random.default_rng(args.seed)
    wq = decaying_weights(HEADS_Q * HEAD_DIM, rng)
    wk = decaying_weights(HEADS_KV * HEAD_DIM, rng)
    print(f"seed {args.seed}; d_model {D_MODEL}, {HEADS_Q} query heads, {HEADS_KV} KV heads, d_h {HEAD_DIM}; "
          f"{os.cpu_count()} cores")

    spectral = Spectral()
    times = []
    for _ in range(args.repeats):  # cold starts: no warm-start vector
        start = time.perf_counter()
        sigma, iterations, _ = spectral.sigma(wq, wk, HEADS_Q, HEADS_KV, HEAD_DIM)
        times.append(time.perf_counter() - start)
    spectral.close()
    library_time = float(np.median(times))
    print(f"library: all {HEADS_Q} heads in {library_time * 1e3:.1f} ms (median of {args.repeats}; "
          f"iterations {iterations.min()}..{iterations.max()})")

    group = HEADS_Q // HEADS_KV
    heads = np.linspace(0, HEADS_Q - 1, num=min(args.svd_heads, HEADS_Q)).round().astype(int)
    svd_times, worst = [], 0.0
    for h in heads:
        g = h // group
        start = time.perf_counter()
        m = wq[h * HEAD_DIM:(h + 1) * HEAD_DIM].astype(np.float64).T @ wk[g * HEAD_DIM:(g + 1) * HEAD_DIM].astype(np.float64)
        reference = np.linalg.svd(m, compute_uv=False)[0]
        svd_times.append(time.perf_counter() - start)
        rel = abs(float(sigma[h]) - reference) / reference
        worst = max(worst, rel)
        print(f"numpy: head {h}: form + SVD {svd_times[-1]:.1f} s, sigma {reference:.6f}, library {sigma[h]:.6f}, "
              f"rel {rel:.1e}")
    numpy_time = float(np.mean(svd_times)) * HEADS_Q
    ratio = numpy_time / library_time
    measured = "measured" if len(heads) == HEADS_Q else f"{len(heads)} heads timed, x{HEADS_Q / len(heads):g}"
    print(f"numpy/LAPACK for all {HEADS_Q} heads: {numpy_time:.1f} s ({measured})")
    print(f"speedup: {ratio:.0f}x at max relative difference {worst:.1e} (target >= 50x at 1e-4)")
    if worst > 1e-4:
        sys.exit("accuracy target missed")


if __name__ == "__main__":
    main()
