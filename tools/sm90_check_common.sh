# Sourced by the sm_90a static-check scripts (tools/check_sm90_build.sh,
# tests/quantize/check_quantize_sm90a.sh, tools/check_attention_sm90a.sh,
# tools/check_attention_bwd_sm90a.sh): the nvcc and cuobjdump lookups, the PASS/FAIL tally and the
# steps the attention checks share. Expects $root (the repository root) to be set.

# Sets $nvcc, or exits 77 (ctest's skip code) saying why. $1 names what needs it.
require_nvcc() {
  nvcc="${NVCC:-$(command -v nvcc || true)}"
  [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
  if [ -z "$nvcc" ]; then
    echo "SKIP: nvcc not found (set NVCC or put it on PATH); $1 needs it"
    exit 77
  fi
}

failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Sets $cuobjdump: $CUOBJDUMP, else PyPI's nvidia-cuda-cuobjdump in .venv (a symlinked .venv is
# followed), else one on PATH; empty when none is found.
find_cuobjdump() {
  local venv_bin
  venv_bin=$(find -H "$root/.venv" -path "*nvidia/cu*/bin/cuobjdump" -type f 2>/dev/null | head -1)
  cuobjdump="${CUOBJDUMP:-${venv_bin:-$(command -v cuobjdump || true)}}"
}

# Compiles $1 (a .cu) to the cubin $2 with ptxas' statistics and warnings in the log $3; exits 1
# when nvcc fails. $4 names the kernels in the messages.
compile_sm90a_cubin() {
  local start
  start=$(date +%s)
  if ! "$nvcc" -std=c++17 -I"$root" -arch=sm_90a -cubin -Xptxas -v,-warn-spills,-warn-lmem-usage -o "$2" \
      "$1" >"$3" 2>&1; then
    cat "$3"
    fail "nvcc -arch=sm_90a does not compile $4"
    exit 1
  fi
  pass "nvcc -arch=sm_90a compiles $4 in $(( $(date +%s) - start )) s"
}

# Sets $cubin and $log for the .cu $1: the library build's own object and ptxas log when $2 (its
# compile directory, cmake/nvcc_ptxas_log.sh) is given, else a fresh compile into $work. Exits 1
# when $2 is given but holds nothing for $1 (the library is not built yet), rather than compiling
# silently. $3 names the kernels in the messages.
sm90a_compile_products() {
  local name
  name=$(basename "$1")
  if [ -n "${2:-}" ]; then
    cubin="$2/$name.o"
    log="$2/$name.ptxas.log"
    if [ ! -s "$log" ] || [ ! -f "$cubin" ]; then
      fail "no ptxas log or object of $name in $2: build the library (fp8attn_attention_sm90a) first"
      exit 1
    fi
    pass "reading the library build's compile of $3 ($cubin, $log)"
  else
    cubin="$work/${name%.cu}.cubin"
    log="$work/ptxas.log"
    compile_sm90a_cubin "$1" "$cubin" "$log" "$3"
  fi
}

# Builds and runs tools/$1.cpp (a kernel-table printer) into $work, writing its lines to $2;
# exits 1 when it does not build or run.
print_kernel_table() {
  if ! c++ -std=c++20 -I"$root" -o "$work/$1" "$root/tools/$1.cpp" || ! "$work/$1" >"$2"; then
    fail "tools/$1.cpp does not build or run"
    exit 1
  fi
}

# The ptxas log $1 shows no spill, stack frame or local memory, no serialized wgmma (C7510..C7515)
# and no ignored setmaxnreg (C7508).
check_ptxas_log() {
  if grep -qE "[1-9][0-9]* bytes spill|[1-9][0-9]* bytes stack frame|lmem" "$1"; then
    fail "spills, stack frames or local memory:"; grep -E "Compiling entry|spill|stack frame" "$1" | grep -B1 -E "[1-9][0-9]* bytes (spill|stack)"
  else
    pass "no spills, no stack frame, no local memory in any kernel"
  fi
  if grep -qE "C751[0-5]" "$1"; then fail "ptxas serialized wgmma:"; grep -E "C751[0-5]" "$1"; else pass "no C7510..C7515 (wgmma not serialized)"; fi
  if grep -q "C7508" "$1"; then fail "ptxas ignored setmaxnreg (C7508)"; else pass "no C7508 (setmaxnreg honoured)"; fi
}

# Kernel $1 of $2 threads, ptxas' $3 registers each, producer budget $4, consumer budget $5:
# setmaxnreg.inc waits until the CTA's launch pool (threads x ptxas' count, not the 64K file) has
# the registers, so the budgets must fit it, or the consumers hang on the GPU (an H200 did, with
# 32 + 2 x 240 at 384 threads x 168). Returns 1 and says why when they do not.
check_register_pool() {
  local need=$((128 * $4 + ($2 - 128) * $5)) pool=$(($2 * $3))
  [ "$need" -le "$pool" ] && return 0
  echo "   $1: producer $4 + consumers $5 need $need registers, the launch pool holds $pool ($2 threads x $3)"
  return 1
}

# Dumps the SASS of the cubin $1 into $2 with cuobjdump; exits 1 when cuobjdump is missing or fails.
dump_sass() {
  find_cuobjdump
  if [ -z "$cuobjdump" ] || [ ! -x "$cuobjdump" ]; then
    fail "cuobjdump not found (set CUOBJDUMP, or scripts/install-deps.sh installs nvidia-cuda-cuobjdump in .venv)"
    exit 1
  fi
  if ! PATH="$(dirname "$cuobjdump"):$PATH" "$cuobjdump" --dump-sass "$1" >"$2" 2>"$work/cuobjdump.err"; then
    cat "$work/cuobjdump.err"; fail "cuobjdump --dump-sass failed"; exit 1
  fi
}
