#!/usr/bin/env bash
# Records the current ABI as the baseline that tests/abi/check_abi.sh compares against:
# tests/abi/baseline/libfp8attn.so.<major>.abixml (abidw) and .symbols (exported symbols).
# Run it after a compatible ABI change (appended fields, new functions, new enum values) once the
# change is reviewed, or after a major-version bump, and commit the result.
# Usage: scripts/update-abi-baseline.sh [libfp8attn.so with debug info]
# Without an argument it builds one (RelWithDebInfo, no CUDA) in build-abi/.
set -euo pipefail
cd "$(dirname "$0")/.."
lib=${1:-}
if [[ -z "$lib" ]]; then
  mkdir -p build-abi
  cmake -S . -B build-abi -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFP8ATTN_BUILD_CUDA=OFF -DFP8ATTN_BUILD_TESTS=OFF \
    -DFP8ATTN_BUILD_TOOLS=OFF >build-abi/configure.log || { cat build-abi/configure.log; exit 1; }
  cmake --build build-abi --target fp8attn -j"$(nproc)"
  lib=build-abi/capi/libfp8attn.so
fi
lib=$(readlink -f "$lib")
readelf -S "$lib" | grep -q '\.debug_info' || { echo "$lib has no debug information"; exit 1; }
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
mkdir -p tests/abi/baseline
bash tests/abi/abidw_public.sh "$lib" include "tests/abi/baseline/$soname.abixml"
nm -D --defined-only --with-symbol-versions "$lib" | awk '{print $3}' | sort >"tests/abi/baseline/$soname.symbols"
echo "recorded tests/abi/baseline/$soname.abixml ($(grep -c '<function-decl' "tests/abi/baseline/$soname.abixml") functions)"
echo "and tests/abi/baseline/$soname.symbols ($(wc -l <"tests/abi/baseline/$soname.symbols") symbols)"
bash tests/abi/check_abi.sh "$lib" include
