#!/usr/bin/env bash
# Configures and builds one build tree. Usage: scripts/build.sh DIR [extra cmake args...]
# FP8ATTN_BUILD_TARGETS, when set, limits the build to those targets.
# The sm_90a kernels are built when nvcc is found (FP8ATTN_BUILD_CUDA); everything else needs
# only the Debian packages that scripts/install-deps.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
cuda=OFF
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda=ON
  export PATH="$PATH:/usr/local/cuda/bin"
fi
mkdir -p "$dir"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DFP8ATTN_BUILD_CUDA="$cuda" "$@" >"$dir/configure.log" 2>&1 \
  || { cat "$dir/configure.log"; exit 1; }
targets=()
for t in ${FP8ATTN_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" -j"$(nproc)" "${targets[@]}"
