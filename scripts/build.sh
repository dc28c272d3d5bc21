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
# NOTE: ccache when installed (scripts/install-deps.sh installs it): the test command builds the
# same library objects more than once (its Release stage, and the fresh clone of tests/readme
# that runs the README's two commands), and a hit costs nothing in results. CCACHE_BASEDIR makes
# the cache key relative to the checkout, so a clone elsewhere hits the same entries.
launcher=()
if command -v ccache >/dev/null 2>&1 && [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
mkdir -p "$dir"
cmake -S . -B "$dir" -U 'FP8ATTN_*' -DCMAKE_BUILD_TYPE=Release -DFP8ATTN_BUILD_CUDA="$cuda" "${launcher[@]}" "$@" >"$dir/configure.log" 2>&1 \
  || { cat "$dir/configure.log"; exit 1; }
[ "${FP8ATTN_CONFIGURE_ONLY:-0}" = 1 ] && exit 0
targets=()
for t in ${FP8ATTN_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" -j"$(nproc)" "${targets[@]}"
