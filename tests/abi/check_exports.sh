#!/usr/bin/env bash
# Checks libfp8attn's dynamic symbol table and dynamic section (DESIGN §2, "Symbols"):
#  - every exported (defined, dynamic) symbol starts with fp8attn_; the version node FP8ATTN_0
#    is the one allowed exception;
#  - every function the public header declares is exported (fp8attn_host_alloc and
#    fp8attn_host_free included); tests/abi/check_abi.sh also compares the whole list with the
#    committed tests/abi/baseline/libfp8attn.so.<major>.symbols;
#  - the SONAME is libfp8attn.so.<major>;
#  - no NEEDED entry mentions cuda (the core loads on machines without a driver or toolkit).
# Usage: check_exports.sh <libfp8attn.so> <major> <fp8attn.h>
set -euo pipefail
lib=$1 major=$2 header=$3
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# nm -D --defined-only prints "<value> <type> <name>[@@VERSION]"; absolute symbols are version
# nodes.
mapfile -t exported < <(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
echo "exported symbols: ${#exported[@]}"
((${#exported[@]} > 0)) || fail "nm found no exported symbol in $lib"
for sym in "${exported[@]}"; do
  case "$sym" in
    fp8attn_*) ;;
    FP8ATTN_0) ;;
    *) fail "exported symbol without the fp8attn_ prefix: $sym" ;;
  esac
done

mapfile -t declared < <(grep -E '^FP8ATTN_API' "$header" | grep -oE 'fp8attn_[a-z0-9_]+\(' | tr -d '(' | sort -u)
echo "functions declared in the header: ${#declared[@]}"
((${#declared[@]} > 0)) || fail "no FP8ATTN_API declaration found in $header"
for fn in "${declared[@]}"; do
  # NOTE: grep without -q reads all its input: with -q it may exit at the first match, and the
  # printf's SIGPIPE then fails the pipeline under pipefail (a flaky "not exported").
  printf '%s\n' "${exported[@]}" | grep -x "$fn" >/dev/null || fail "declared in the header but not exported: $fn"
done

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "SONAME: $soname"
[[ "$soname" == "libfp8attn.so.$major" ]] || fail "SONAME is '$soname', expected libfp8attn.so.$major"

mapfile -t needed < <(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "NEEDED: ${needed[*]}"
for n in "${needed[@]}"; do
  if [[ "${n,,}" == *cuda* || "${n,,}" == *cublas* || "${n,,}" == libnv* ]]; then
    fail "NEEDED entry depends on CUDA: $n"
  fi
done

echo "$failures failure(s)"
((failures == 0))
