#!/usr/bin/env bash
# Compiles and runs the README's C example from the README's own text: the first ```c block
# after the line "<!-- ci: tests/readme/check_readme_example.sh -->". C99, -pedantic, -Werror,
# against the build tree's header and libfp8attn, as a host program would be.
# Usage: check_readme_example.sh README.md <include dir> <libfp8attn.so> <work dir> <cc>
set -euo pipefail
readme=$1 include=$2 lib=$3 work=$4 cc=$5
mkdir -p "$work"
awk '/<!-- ci: tests\/readme\/check_readme_example.sh -->/ { armed = 1; next }
     armed && /^```c$/ { inside = 1; next }
     inside && /^```$/ { exit }
     inside { print }' "$readme" > "$work/forward.c"
lines=$(wc -l < "$work/forward.c")
echo "extracted $lines lines from $readme"
[ "$lines" -gt 20 ] || { echo "FAIL: no C example found after the marker in $readme"; exit 1; }
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror -I"$include" "$work/forward.c" -L"$(dirname "$lib")" -lfp8attn \
  -o "$work/forward"
LD_LIBRARY_PATH=$(dirname "$lib") FP8ATTN_CUDA_BACKEND="$work/no-such-dir/libfp8attn_cuda.so" "$work/forward" \
  | tee "$work/forward.out"
grep -q '^backend: CPU$' "$work/forward.out" || { echo "FAIL: the example did not report the CPU backend"; exit 1; }
grep -Eq '^out\[0, 0, 0, 0:4\] = (-?[0-9]+\.[0-9]+ ?){4}$' "$work/forward.out" \
  || { echo "FAIL: the example printed no finite output"; exit 1; }
