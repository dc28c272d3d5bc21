#!/usr/bin/env bash
# Static checks on the sm_90a build of the GEMM kernel (kernels/sm90/gemm/gemm_sm90a.cu):
#   0. no inline asm in kernels/sm90 (kernel text goes through kernels/arch);
#   1. nvcc for sm_90a with ptxas -v -warn-spills -warn-lmem-usage: no spills, no local memory,
#      no C7511/C7515 ("wgmma serialized") and no C7508 ("setmaxnreg ignored") messages;
#   2. cuobjdump --dump-sass (PyPI nvidia-cuda-cuobjdump, with nvdisasm from
#      nvidia-cuda-nvdisasm, both in .venv) shows QGMMA (FP8), HGMMA (BF16) and UTMALDG (TMA);
#   3. building for plain sm_90 fails, and fails on the kernel's sm_90a guard;
#   4. every other inline-PTX form of kernels/arch assembles for sm_90a
#      (tools/sm90a_arch_coverage.cu: all wgmma shapes and operand forms, TMA 2D-5D, ldmatrix,
#      stmatrix, cvt, ex2), and its SASS has the matching instructions.
# Exit 0 when every check passes, 1 when one fails, 77 (ctest SKIP_RETURN_CODE) when nvcc is
# not available. Usage: tools/check_sm90_build.sh [work_dir]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
source_file="$root/kernels/sm90/gemm/gemm_sm90a.cu"

# shellcheck source=tools/sm90_check_common.sh
source "$root/tools/sm90_check_common.sh"
require_nvcc "the sm_90a static checks"

echo "== sm_90a static checks of $source_file"
echo "   nvcc: $nvcc ($("$nvcc" --version | tail -1))"

# 0. Kernel text calls the arch layer only (STYLE.md rule 5): no inline asm under kernels/sm90.
raw_asm=$(grep -rnE "\basm[[:space:]]*(volatile[[:space:]]*)?\(" "$root/kernels/sm90" --include='*.hpp' --include='*.cuh' --include='*.cu' --include='*.h' || true)
if [ -z "$raw_asm" ]; then pass "no inline asm in kernels/sm90 (kernels call kernels/arch only)"; else fail "inline asm outside kernels/arch:"; echo "$raw_asm"; fi

# 1. ptxas statistics.
cubin="$work/gemm_sm90a.cubin"
ptxas_log="$work/ptxas.log"
if "$nvcc" -std=c++17 -I"$root" -arch=sm_90a -cubin -Xptxas -v,-warn-spills,-warn-lmem-usage \
    -o "$cubin" "$source_file" >"$ptxas_log" 2>&1; then
  pass "nvcc -arch=sm_90a compiles the GEMM kernel"
else
  cat "$ptxas_log"
  fail "nvcc -arch=sm_90a does not compile the GEMM kernel"
  echo "== $failures check(s) failed"
  exit 1
fi
grep -E "Compiling entry|registers|spill|stack frame" "$ptxas_log" | sed 's/^/   /'
kernels=$(grep -c "Compiling entry function" "$ptxas_log")
spilling=$(grep -E "[1-9][0-9]* bytes spill (stores|loads)" "$ptxas_log" | wc -l)
stack=$(grep -E "[1-9][0-9]* bytes stack frame" "$ptxas_log" | wc -l)
lmem=$(grep -iE "local memory|[1-9][0-9]* bytes lmem" "$ptxas_log" | wc -l)
if [ "$kernels" -ge 2 ] && [ "$spilling" -eq 0 ]; then pass "no register spills in $kernels kernels"; else fail "spills ($spilling lines) or too few kernels ($kernels)"; fi
if [ "$stack" -eq 0 ] && [ "$lmem" -eq 0 ]; then pass "no local memory (stack frames 0 bytes, no -warn-lmem-usage message)"; else fail "local memory used"; grep -iE "stack frame|local memory|lmem" "$ptxas_log"; fi
if grep -qE "C751[15]" "$ptxas_log"; then fail "ptxas serialized wgmma (C7511/C7515)"; grep -E "C751[15]" "$ptxas_log"; else pass "no C7511/C7515 (wgmma not serialized)"; fi
if grep -q "C7508" "$ptxas_log"; then fail "ptxas ignored setmaxnreg (C7508)"; grep "C7508" "$ptxas_log"; else pass "no C7508 (setmaxnreg honoured)"; fi

# 2. SASS.
find_cuobjdump
if [ -z "$cuobjdump" ] || [ ! -x "$cuobjdump" ]; then
  fail "cuobjdump not found in .venv (scripts/install-deps.sh installs nvidia-cuda-cuobjdump)"
else
  sass="$work/gemm_sm90a.sass"
  # NOTE: cuobjdump --dump-sass runs nvdisasm, which PyPI ships separately (nvidia-cuda-nvdisasm)
  # into the same bin directory.
  if PATH="$(dirname "$cuobjdump"):$PATH" "$cuobjdump" --dump-sass "$cubin" >"$sass" 2>"$work/cuobjdump.err"; then
    for op in QGMMA HGMMA UTMALDG; do
      count=$(grep -c "\b$op" "$sass")
      example=$(grep -m1 -oE "\b$op[A-Z0-9._x]*" "$sass")
      if [ "$count" -gt 0 ]; then pass "SASS has $op ($count instructions, e.g. $example)"; else fail "SASS has no $op"; fi
    done
  else
    cat "$work/cuobjdump.err"
    fail "cuobjdump --dump-sass failed (nvdisasm comes from nvidia-cuda-nvdisasm)"
  fi
fi

# 3. The guard: plain sm_90 must not build.
guard_log="$work/sm90.log"
if "$nvcc" -std=c++17 -I"$root" -arch=sm_90 -cubin -o "$work/gemm_sm90.cubin" "$source_file" >"$guard_log" 2>&1; then
  fail "building for plain sm_90 succeeded; the sm_90a guard is missing"
elif grep -q "need the sm_90a target" "$guard_log"; then
  pass "building for plain sm_90 fails on the kernel's guard: $(grep -m1 -o 'error.*' "$guard_log")"
else
  sed 's/^/   /' "$guard_log" | head -5
  fail "building for plain sm_90 fails, but not on the kernel's guard"
fi

# 4. The rest of the arch layer's PTX. Its C7511 messages are expected: the coverage kernel
# chains every shape in one function, which no real kernel does.
coverage_cubin="$work/arch_coverage.cubin"
if "$nvcc" -std=c++17 -I"$root" -arch=sm_90a -cubin -o "$coverage_cubin" "$root/tools/sm90a_arch_coverage.cu" \
    >"$work/arch_coverage.log" 2>&1; then
  pass "every kernels/arch inline-PTX form assembles for sm_90a (tools/sm90a_arch_coverage.cu)"
  if [ -n "$cuobjdump" ] && [ -x "$cuobjdump" ] &&
      PATH="$(dirname "$cuobjdump"):$PATH" "$cuobjdump" --dump-sass "$coverage_cubin" >"$work/arch_coverage.sass" 2>&1; then
    shapes=$(grep -oE "\b[QH]GMMA\.64x[0-9]+x(16|32)\.F32\.[A-Z0-9.]+" "$work/arch_coverage.sass" | sort -u | wc -l)
    missing=""
    for op in UTMALDG.2D UTMALDG.5D UTMASTG.2D UTMASTG.5D LDSM.16.M88.4 LDSM.16.MT88.4 STSM.16.M88.4 STSM.16.MT88.4 \
              F2FP.SATFINITE.E4M3 F2FP.SATFINITE.E5M2 F2FP.BF16 MUFU.EX2; do
      grep -q "$op" "$work/arch_coverage.sass" || missing="$missing $op"
    done
    # 16 N x (E4M3, E5M2, BF16) = 48 distinct wgmma shape/type pairs.
    if [ "$shapes" -ge 48 ] && [ -z "$missing" ]; then
      pass "coverage SASS has $shapes wgmma shape/type pairs, TMA 2D-5D loads/stores, LDSM/STSM (.trans), F2FP packs, MUFU.EX2"
    else
      fail "coverage SASS: $shapes wgmma shape/type pairs (want 48), missing:$missing"
    fi
  fi
else
  sed 's/^/   /' "$work/arch_coverage.log" | head -20
  fail "kernels/arch inline PTX does not assemble for sm_90a (tools/sm90a_arch_coverage.cu)"
fi

if [ "$failures" -eq 0 ]; then
  echo "== all sm_90a static checks passed"
  exit 0
fi
echo "== $failures check(s) failed"
exit 1
