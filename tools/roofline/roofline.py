#!/usr/bin/env python3
"""A roofline of the attention forward per KV block, from counts taken without a GPU.

Usage: tools/roofline/roofline.py STATIC_CHECKS_LOG [BANK_CONFLICTS_LOG]
  STATIC_CHECKS_LOG: the output of tools/check_attention_sm90a.sh (test fp8_fwd_sm90a_static_checks),
    whose per-KV-block table gives each kernel's GMMA N·K, MUFU.EX2 and instruction counts;
  BANK_CONFLICTS_LOG: the output of fp8_fwd_emu.Fp8FwdEmuBankConflicts.WavefrontsPerRolePerKvBlock,
    whose table gives the shared-memory wavefronts per KV block of each kernel (the rows marked
    "per tile", Q's load and O's stage, are left out; telemetry adds per-tile epilogue accesses
    only, so both telemetry variants take the same count).

One CTA per SM; per KV block the SM needs at least (cycles):
  tensor  = consumer warpgroups x 2·64·ΣN·K of the block's GMMAs / tensor FLOP per cycle per SM;
  MUFU    = consumer threads x MUFU.EX2 per thread / MUFU results per cycle per SM;
  issue   = consumer warps per SM sub-partition x instructions per warp (the unconditional path of
            the main loop: a lower bound; the producer's and transposers' issue slots not counted);
  smem    = shared-memory wavefronts of every role (one 128-byte wavefront per cycle per SM).
The bound is the largest; its TFLOP/s = 4·BlockM·BlockN·head_dim FLOP per block x SMS x CLOCK.

NOTE: the Hopper throughputs assumed (H100 SXM5, the H200's SM count and clocks):
  - 132 SMs at 1.83 GHz: NVIDIA's H100 datasheet figures (989.4 dense BF16 TFLOP/s = 132 SMs x 4
    tensor cores x 512 FMA x 2 x 1.83 GHz);
  - tensor cores: 4096 dense BF16 and 8192 dense FP8 FLOP per cycle per SM (the same datasheet:
    989.4 BF16 and 1978.9 FP8 dense TFLOP/s);
  - MUFU: 16 ex2 results per cycle per SM (CUDA C++ Programming Guide, throughput of native
    arithmetic instructions, compute capability 9.0; FlashAttention-3 §3.1 quotes 3.9 TFLOP/s of
    special functions on an H100 SXM5, 16.1 per SM per cycle);
  - issue: one warp instruction per cycle per SM sub-partition, 4 per SM (Hopper whitepaper);
  - shared memory: 32 banks x 4 bytes, one 128-byte wavefront per cycle per SM.
Calibration: the H200 run of docs/gpu_runs/gpu_run_h200.md (16k tokens, non-causal, E4M3, promotion off).
"""
import re
import sys

SMS, CLOCK = 132, 1.83e9
TENSOR_FLOP_PER_CYCLE = {"E4M3": 8192, "BF16": 4096}
MUFU_PER_CYCLE = 16
SMEM_WAVEFRONTS_PER_CYCLE = 1
# docs/gpu_runs/gpu_run_h200.md, "Speed": fp8attn_cuda_bench, 16k tokens, non-causal (TFLOP/s). The
# times include the per-call fixed costs (about 0.41-0.47 ms of a 5 ms hd128 call).
MEASURED_TFLOPS_16K = {64: 234, 128: 412, 256: 449}


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def read_sass(path):
    kernels = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            c = cells(line) if line.lstrip().startswith("|") else []
            if len(c) == 16 and re.match(r"^(E4M3|BF16), \d+, ", c[0]) and "x" in c[1]:
                dtype, hd, promotion, telemetry = [x.strip() for x in c[0].split(",")]
                block_m, block_n = (int(x) for x in c[1].split("x"))
                kernels.append(dict(dtype=dtype, hd=int(hd), promotion=promotion, telemetry=telemetry,
                                    block_m=block_m, block_n=block_n, consumers=int(c[2]), nk=float(c[3]),
                                    ex2=float(c[5]), total=float(c[9]), unconditional=float(c[10])))
    return kernels


def read_smem(path):
    wavefronts = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            c = cells(line) if line.lstrip().startswith("|") else []
            m = re.match(r"^(E4M3|BF16), (\d+), (\S+)$", c[0]) if len(c) == 6 else None
            # Roles "per tile" (Q's load, O's stage) happen once per query tile: a 16k-token tile
            # spreads them over 70 to 170 KV blocks, so the steady state's bound leaves them out.
            if m and "per tile" not in c[1]:
                key = (m.group(1), int(m.group(2)), m.group(3))
                wavefronts[key] = wavefronts.get(key, 0.0) + float(c[3])
    return wavefronts


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    kernels = read_sass(sys.argv[1])
    smem = read_smem(sys.argv[2]) if len(sys.argv) > 2 else {}
    if not kernels:
        sys.exit(f"no per-KV-block table in {sys.argv[1]}")
    print("| kernel (input, head_dim, promotion, telemetry) | tile | tensor | MUFU | issue | smem "
          "| bound (cycles/block) | limited by | bound TFLOP/s | H200 measured cycles/block | bound / measured |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k in kernels:
        tensor = k["consumers"] * 2 * 64 * k["nk"] / TENSOR_FLOP_PER_CYCLE[k["dtype"]]
        mufu = k["consumers"] * 128 * k["ex2"] / MUFU_PER_CYCLE
        issue = k["consumers"] * k["unconditional"]  # one warp of each consumer warpgroup per sub-partition
        limits = {"tensor": tensor, "MUFU": mufu, "issue": issue}
        key = (k["dtype"], k["hd"], k["promotion"])
        counted_smem = key in smem
        if counted_smem:
            limits["smem"] = smem[key] / SMEM_WAVEFRONTS_PER_CYCLE
        limiter = max(limits, key=limits.get)
        bound = limits[limiter]
        flop = 4 * k["block_m"] * k["block_n"] * k["hd"]
        tflops = flop * SMS * CLOCK / bound / 1e12
        measured, ratio = "", ""
        if k["dtype"] == "E4M3" and k["promotion"] == "off" and k["telemetry"] == "0":
            cycles = flop / (MEASURED_TFLOPS_16K[k["hd"]] * 1e12 / (SMS * CLOCK))
            measured, ratio = f"{cycles:.0f}", f"{bound / cycles:.2f}"
        print(f"| {k['dtype']}, {k['hd']}, {k['promotion']}, {k['telemetry']} | {k['block_m']}x{k['block_n']} "
              f"| {tensor:.0f} | {mufu:.0f} | {issue:.0f} | {limits['smem']:.0f} | " if counted_smem else
              f"| {k['dtype']}, {k['hd']}, {k['promotion']}, {k['telemetry']} | {k['block_m']}x{k['block_n']} "
              f"| {tensor:.0f} | {mufu:.0f} | {issue:.0f} | n/a | ", end="")
        print(f"{bound:.0f} | {limiter} | {tflops:.0f} | {measured} | {ratio} |")


if __name__ == "__main__":
    main()
