#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the main job on the CPU backend: FP8 attention on
# an attention-sink problem (batch 1, 8 heads, 4096 tokens, head_dim 128) with accuracy against
# the FP64 oracle, predicted vs measured P underflow for both KV orders, and throughput.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build -DFP8ATTN_BUILD_TESTS=OFF -DFP8ATTN_BUILD_CUDA=OFF
./build/tools/fp8attn/fp8attn "$@"
