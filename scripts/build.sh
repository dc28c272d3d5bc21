#!/usr/bin/env bash
# Configures and builds one build tree. Usage: scripts/build.sh DIR [extra cmake args...]
# FP8ATTN_BUILD_TARGETS, when set, limits the build to those targets; FP8ATTN_CONFIGURE_ONLY=1
# configures and builds nothing.
# The sm_90a kernels are built when nvcc is found (FP8ATTN_BUILD_CUDA); everything else needs
# only the Debian packages that scripts/install-deps.sh installs.
# NOTE: every call configures from the project's defaults plus the arguments it passes: `-U
# 'FP8ATTN_*'` drops the project's options from an existing CMake cache first, so an option one
# caller set (the main job's FP8ATTN_BUILD_TESTS=OFF) cannot leak into another caller's build of
# the same folder (scripts/run-tests.sh's Release stage, which would then find no tests).
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
cmake -S . -B "$dir" -U 'FP8ATTN_*' -DCMAKE_BUILD_TYPE=Release -DFP8ATTN_BUILD_CUDA="$cuda" "$@" >"$dir/configure.log" 2>&1 \
  || { cat "$dir/configure.log"; exit 1; }
[ "${FP8ATTN_CONFIGURE_ONLY:-0}" = 1 ] && exit 0
targets=()
for t in ${FP8ATTN_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" -j"$(nproc)" "${targets[@]}"
