#!/usr/bin/env bash
# Static checks on the sm_90a build of the quantizer kernels (kernels/sm90/quantize):
#   1. no inline asm in kernels/sm90/quantize (kernel text goes through kernels/arch);
#   2. nvcc -arch=sm_90a with ptxas -warn-spills -warn-lmem-usage: six kernels, no spills, no
#      stack frame, no local memory;
#   3. the SASS has SHFL.BFLY (the cross-lane butterflies and amax reductions) and
#      F2FP.SATFINITE.E4M3 (cvt.rn.satfinite.e4m3x2), via cuobjdump from .venv.
# Exit 0 when every check passes, 1 when one fails, 77 (ctest's skip code) without nvcc.
# Usage: tests/quantize/check_quantize_sm90a.sh [work_dir]
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
source_file="$root/kernels/sm90/quantize/quantize_sm90a.cu"
# shellcheck source=tools/sm90_check_common.sh
source "$root/tools/sm90_check_common.sh"
require_nvcc "the quantizer's sm_90a checks"

raw_asm=$(grep -rnE "\basm[[:space:]]*(volatile[[:space:]]*)?\(" "$root/kernels/sm90/quantize" || true)
if [ -z "$raw_asm" ]; then pass "no inline asm in kernels/sm90/quantize"; else fail "inline asm outside kernels/arch:"; echo "$raw_asm"; fi

cubin="$work/quantize_sm90a.cubin"
log="$work/ptxas.log"
if "$nvcc" -std=c++17 -I"$root" -arch=sm_90a -cubin -Xptxas -v,-warn-spills,-warn-lmem-usage -o "$cubin" \
    "$source_file" >"$log" 2>&1; then
  pass "nvcc -arch=sm_90a compiles the quantizer kernels"
else
  cat "$log"
  fail "nvcc -arch=sm_90a does not compile the quantizer kernels"
  echo "== $failures check(s) failed"
  exit 1
fi
grep -E "Compiling entry|registers|spill|stack frame" "$log" | sed 's/^/   /'
kernels=$(grep -c "Compiling entry function" "$log")
spilling=$(grep -cE "[1-9][0-9]* bytes spill (stores|loads)" "$log")
stack=$(grep -cE "[1-9][0-9]* bytes stack frame" "$log")
lmem=$(grep -ciE "local memory|[1-9][0-9]* bytes lmem" "$log")
if [ "$kernels" -eq 6 ]; then pass "six kernels (two passes × head_dim 64, 128, 256)"; else fail "$kernels kernels, expected 6"; fi
if [ "$spilling" -eq 0 ]; then pass "no register spills"; else fail "register spills"; fi
if [ "$stack" -eq 0 ] && [ "$lmem" -eq 0 ]; then pass "no stack frame, no local memory"; else fail "local memory used"; fi

find_cuobjdump
if [ -z "$cuobjdump" ] || [ ! -x "$cuobjdump" ]; then
  fail "cuobjdump not found (scripts/install-deps.sh installs nvidia-cuda-cuobjdump into .venv)"
else
  sass="$work/quantize_sm90a.sass"
  if PATH="$(dirname "$cuobjdump"):$PATH" "$cuobjdump" --dump-sass "$cubin" >"$sass" 2>"$work/cuobjdump.err"; then
    for op in SHFL.BFLY F2FP.SATFINITE.E4M3; do
      count=$(grep -c "$op" "$sass")
      if [ "$count" -gt 0 ]; then pass "SASS has $op ($count lines)"; else fail "SASS has no $op"; fi
    done
  else
    cat "$work/cuobjdump.err"
    fail "cuobjdump --dump-sass failed"
  fi
fi
if [ "$failures" -eq 0 ]; then echo "== all checks passed"; exit 0; fi
echo "== $failures check(s) failed"
exit 1
