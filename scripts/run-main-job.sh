#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the main job on the CPU backend: FP8 attention on
# an attention-sink problem (batch 1, 8 heads, 4096 tokens, head_dim 128) with accuracy against
# the FP64 oracle, predicted vs measured P underflow for both KV orders, and throughput.
set -euo pipefail
cd "$(dirname "$0")/.."
# NOTE: only the main job's Debian packages and its one target (the core, libfp8attn, the tool);
# scripts/run-tests.sh installs and builds the rest. scripts/build.sh configures from the
# project's defaults each time, so this call's FP8ATTN_BUILD_TESTS=OFF does not outlive it.
bash scripts/install-deps.sh --main-job
FP8ATTN_BUILD_TARGETS=fp8attn_tool bash scripts/build.sh build -DFP8ATTN_BUILD_TESTS=OFF -DFP8ATTN_BUILD_CUDA=OFF
./build/tools/fp8attn/fp8attn "$@"
