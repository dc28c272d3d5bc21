#!/usr/bin/env bash
# Runs FlashAttention-3's own test file (hopper/test_flash_attn.py, not part of this repository)
# against fp8attn's CPU backend through the adapter in this folder, and prints pass / fail / skip
# counts per test function. Not part of CI: it needs a FlashAttention checkout and torch.
#
# Usage: tools/peers/fa3_tests/run.sh FLASH_ATTENTION/hopper [pytest arguments: -k EXPR, node ids
#        test_flash_attn.py::test_flash_attn_output[...], --deselect ...]
# Environment: FP8ATTN_LIBRARY (default build/capi/libfp8attn.so), PYTHON (a python with torch,
# pytest, einops, numpy and ml_dtypes; default python3), FA3_OUT (default out/fa3_tests: junit.xml,
# summary.txt, pytest.log), FA3_COMMIT (printed; default: git of the hopper folder),
# FP8ATTN_FA3_THREADS (fp8attn's threads, default 1), FP8ATTN_FA3_STRICT=1 (refuse the adapter's exact compositions, see flash_attn_interface.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
[[ $# -ge 1 && -f "$1/test_flash_attn.py" ]] || { echo "usage: $0 FLASH_ATTENTION/hopper [pytest args]" >&2; exit 2; }
hopper=$(cd "$1" && pwd)
shift
python=${PYTHON:-python3}
out=${FA3_OUT:-$root/out/fa3_tests}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export FP8ATTN_LIBRARY=${FP8ATTN_LIBRARY:-$root/build/capi/libfp8attn.so}
[[ -f "$FP8ATTN_LIBRARY" ]] || { echo "no fp8attn library at $FP8ATTN_LIBRARY (build it, or set FP8ATTN_LIBRARY)" >&2; exit 2; }
export PYTHONPATH="$here:$root/bindings/python/src${PYTHONPATH:+:$PYTHONPATH}"
export FP8ATTN_FA3_THREADS=${FP8ATTN_FA3_THREADS:-1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
# Their test file imports flash_attn_interface, padding and test_util from its own folder, which
# also holds FlashAttention's flash_attn_interface.py: the three files are copied, unchanged, into
# a scratch folder, so that the adapter is the flash_attn_interface found.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$hopper/test_flash_attn.py" "$hopper/test_util.py" "$hopper/padding.py" "$work/"
commit=${FA3_COMMIT:-$(git -C "$hopper" rev-parse HEAD 2>/dev/null || echo unknown)}
echo "FlashAttention test file: $hopper/test_flash_attn.py (commit $commit)"
echo "fp8attn library: $FP8ATTN_LIBRARY"
# Node ids (test_flash_attn.py::test_x[...]) among the arguments select tests; otherwise the file.
target=(test_flash_attn.py)
for a in "$@"; do [[ $a == test_flash_attn.py::* ]] && target=(); done
status=0
(cd "$work" && "$python" -m pytest -p fa3_cpu_plugin -p no:cacheprovider -q -rf --tb=line \
  --junitxml="$out/junit.xml" "${target[@]}" "$@") >"$out/pytest.log" 2>&1 || status=$?
tail -n 40 "$out/pytest.log"
"$python" "$here/summarize.py" "$out/junit.xml" | tee "$out/summary.txt"
# pytest's 1 means "some tests failed" (reported above); anything else is a broken run.
[[ $status -le 1 ]] || exit "$status"
