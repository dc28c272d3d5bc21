#!/usr/bin/env bash
# Static checks of the decode kernels' sm_90a build (kernels/sm90/decode/decode_sm90a.cu): it
# compiles, it holds the 9 decode kernels (the forward kernel with a DecodeConfig: head_dim 64,
# 128, 256 × E4M3, BF16, and E4M3 promoting every block), and ptxas reports no stack frame and no spills for any of them (the
# producer's budget was the tight one: kernels/sm90/decode/decode_config.hpp).
# Usage: tools/check_decode_sm90a.sh WORK_DIR [COMPILE_DIR]. With COMPILE_DIR (the library
# build's cmake/nvcc_ptxas_log.sh directory) it reads the library's own compile; else it compiles.
# Exit 0 when every check passes, 1 when one fails, 77 without nvcc.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$1"
mkdir -p "$work"
# shellcheck source=tools/sm90_check_common.sh
source "$root/tools/sm90_check_common.sh"
source_file="$root/kernels/sm90/decode/decode_sm90a.cu"
if [ -z "${2:-}" ]; then require_nvcc "the decode kernels' sm_90a check"; fi
echo "== static checks of the decode kernels"
sm90a_compile_products "$source_file" "${2:-}" "the decode kernels"
entries=$(grep -c "Compiling entry function '.*DecodeConfig" "$log")
if [ "$entries" -eq 9 ]; then pass "9 decode kernels"; else fail "$entries decode kernels, expected 9"; fi
frames=$(grep -E "bytes stack frame" "$log" | grep -vc "^ *0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads")
if [ "$frames" -eq 0 ]; then pass "no stack frame and no spills"; else
  fail "$frames functions with a stack frame or spills:"
  grep -E "bytes stack frame" "$log" | grep -v "^ *0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"
fi
[ "$failures" -eq 0 ] && echo "== all checks passed" || echo "== $failures check(s) failed"
[ "$failures" -eq 0 ]
