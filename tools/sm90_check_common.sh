# Sourced by the sm_90a static-check scripts (tools/check_sm90_build.sh,
# tests/quantize/check_quantize_sm90a.sh): the nvcc and cuobjdump lookups and the PASS/FAIL
# tally they share. Expects $root (the repository root) to be set.

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
