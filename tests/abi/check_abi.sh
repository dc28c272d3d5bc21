#!/usr/bin/env bash
# The ABI against the committed baseline (tests/abi/baseline), for one built or installed
# libfp8attn.so.N with debug information:
#  1. the SONAME's major equals the header's FP8ATTN_VERSION_MAJOR;
#  2. the exported symbols (with their version node) equal libfp8attn.so.N.symbols: a missing one
#     is an ABI break, a new one must be added to the list (scripts/update-abi-baseline.sh);
#  3. abidiff against libfp8attn.so.N.abixml finds no incompatible change (abidiff_verdict.py:
#     structs may only grow at their end, nothing removed, no signature changed).
# A new major version (SONAME) has no baseline yet: the break is declared, and the check passes
# with a note until scripts/update-abi-baseline.sh records the new major's baseline.
# Usage: check_abi.sh <libfp8attn.so> <source include dir>
set -euo pipefail
lib=$(readlink -f "$1") include=$2
here=$(cd "$(dirname "$0")" && pwd)
for tool in abidw abidiff readelf nm python3; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (scripts/install-deps.sh installs abigail-tools)"; exit 1; }
done
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
major=${soname##*.so.}
header_major=$(sed -n 's/^#define FP8ATTN_VERSION_MAJOR \([0-9]*\)/\1/p' "$include/fp8attn/fp8attn.h")
echo "SONAME $soname, header major $header_major"
[[ "$major" == "$header_major" ]] || { echo "FAIL: SONAME major $major differs from the header's $header_major"; exit 1; }
base=$here/baseline/$soname
if [[ ! -f "$base.abixml" ]]; then
  echo "NOTE: no baseline for $soname: a new major version; run scripts/update-abi-baseline.sh to record it"
  exit 0
fi
readelf -S "$lib" | grep -q '\.debug_info' || { echo "FAIL: $lib has no debug information (build RelWithDebInfo)"; exit 1; }

failures=0
symdiff=$(mktemp)
current=$(mktemp --suffix=.abixml)
trap 'rm -f "$symdiff" "$current"' EXIT
diff -u "$base.symbols" <(nm -D --defined-only --with-symbol-versions "$lib" | awk '{print $3}' | sort) \
  >"$symdiff" || true
if grep -q '^-[^-]' "$symdiff"; then
  echo "FAIL: exported symbols removed (an ABI break: bump the major version and SONAME):"
  grep '^-[^-]' "$symdiff"; failures=$((failures + 1))
fi
if grep -q '^+[^+]' "$symdiff"; then
  echo "FAIL: exported symbols not in $base.symbols (add them: scripts/update-abi-baseline.sh):"
  grep '^+[^+]' "$symdiff"; failures=$((failures + 1))
fi
echo "exported symbols: $(wc -l <"$base.symbols") in the baseline"

bash "$here/abidw_public.sh" "$lib" "$include" "$current"
set +e
report=$(abidiff --leaf-changes-only --impacted-interfaces "$base.abixml" "$current")
rc=$?
set -e
echo "abidiff exit status $rc"
[[ -n "$report" ]] && echo "$report"
if ((rc & 3)); then
  echo "FAIL: abidiff could not compare"; failures=$((failures + 1))
elif ((rc & 8)); then
  echo "FAIL: abidiff reports an incompatible change"; failures=$((failures + 1))
elif ((rc & 4)); then
  python3 "$here/abidiff_verdict.py" <<<"$report" || failures=$((failures + 1))
fi
echo "$failures failure(s)"
((failures == 0))
