#!/usr/bin/env bash
# libfp8attn's runtime dependencies are exactly the committed list (tests/abi/runtime_deps.txt):
#  - its NEEDED entries (readelf -d), sorted, equal the list;
#  - ldd resolves every library it loads, directly or through OpenBLAS ("not found" fails),
#    and none of them is spdlog or fmt.
# Usage: check_runtime_deps.sh <libfp8attn.so> <runtime_deps.txt>
set -euo pipefail
lib=$1 list=$2
status=0
expected=$(grep -v -e '^#' -e '^$' "$list" | sort)
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort)
echo "NEEDED: $(tr '\n' ' ' <<<"$needed")"
if [ "$needed" != "$expected" ]; then
  echo "FAIL: NEEDED differs from $list (< committed, > built):"
  diff <(echo "$expected") <(echo "$needed") || true
  status=1
fi
closure=$(ldd "$lib")
echo "ldd:"
echo "$closure"
if grep -q 'not found' <<<"$closure"; then echo "FAIL: ldd finds a dependency missing"; status=1; fi
if grep -Eq 'lib(spdlog|fmt)\.so' <<<"$closure"; then echo "FAIL: libfp8attn loads spdlog or fmt at run time"; status=1; fi
exit $status
