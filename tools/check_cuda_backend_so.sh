#!/usr/bin/env bash
# Static checks of the built CUDA backend, libfp8attn_cuda.so, on the library itself
# rather than on a separately compiled cubin (tools/check_attention_sm90a.sh does that):
#   1. no libcuda.so in its dependencies (driver calls come through
#      cudaGetDriverEntryPointByVersion), cudart linked statically, cuBLASLt dynamically;
#   2. exactly one exported symbol, fp8attn_cuda_backend_entry, versioned FP8ATTN_CUDA_1;
#   3. every kernel: no local memory, at most 255 registers, static shared memory ≤ 48 KB;
#   4. every attention kernel carries its GMMA (QGMMA for E4M3 inputs, HGMMA for BF16 and for the
#      backward) and UTMALDG in its SASS; the library holds one forward kernel per entry of its
#      instantiation table (tools/print_fwd_kernels.cpp), three backward kernels (main,
#      preprocessing, dQ) per entry of the backward's (tools/print_bwd_kernels.cpp), the 6
#      quantizer kernels, the 2 spectral kernels, the 10 KV append kernels (no rotation, and
#      K's rotation at head_dim 1, 2, 4, …, 256), the combine kernel and the 9 decode kernels (the
#      forward kernel with a DecodeConfig: head_dim 64, 128, 256 × E4M3, BF16, E4M3 every-block;
#      kernels/sm90/decode/decode_config.hpp).
# Exit 0 when every check passes, 1 when one fails, 77 without cuobjdump.
# Usage: tools/check_cuda_backend_so.sh path/to/libfp8attn_cuda.so
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
lib="$1"
# shellcheck source=tools/sm90_check_common.sh
source "$root/tools/sm90_check_common.sh"
echo "== static checks of $lib"

deps=$(ldd "$lib" 2>&1)
if echo "$deps" | grep -q "libcuda\.so"; then fail "ldd shows libcuda.so:"; echo "$deps"; else pass "ldd: no libcuda.so"; fi
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if echo "$needed" | grep -q "^libcublasLt\.so"; then pass "cuBLASLt linked dynamically"; else fail "no libcublasLt.so in NEEDED: $needed"; fi
if echo "$needed" | grep -q "^libcudart\.so"; then fail "cudart linked dynamically (must be static)"; else pass "cudart not a dynamic dependency (static)"; fi

exports=$(nm -D --defined-only --with-symbol-versions "$lib" | awk '$2 != "A" {print $3}')
if [ "$exports" = "fp8attn_cuda_backend_entry@@FP8ATTN_CUDA_1" ]; then
  pass "one export: $exports"
else
  fail "exports must be fp8attn_cuda_backend_entry@@FP8ATTN_CUDA_1 only, got: $(echo "$exports" | head -5 | tr '\n' ' ')"
fi

find_cuobjdump
if [ -z "$cuobjdump" ] || [ ! -x "$cuobjdump" ]; then
  echo "SKIP: cuobjdump not found (scripts/install-deps.sh installs nvidia-cuda-cuobjdump into .venv)"
  [ "$failures" -eq 0 ] || exit 1  # NOTE: the link checks above ran; a failure there is not a skip
  exit 77
fi
usage=$("$cuobjdump" --dump-resource-usage "$lib" 2>&1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! c++ -std=c++20 -I"$root" -o "$work/print_fwd_kernels" "$root/tools/print_fwd_kernels.cpp" ||
    ! c++ -std=c++20 -I"$root" -o "$work/print_bwd_kernels" "$root/tools/print_bwd_kernels.cpp"; then
  fail "tools/print_fwd_kernels.cpp or tools/print_bwd_kernels.cpp does not build"
  exit 1
fi
table=$("$work/print_fwd_kernels" | wc -l)
bwd_table=$("$work/print_bwd_kernels" | wc -l)
kernels=$(echo "$usage" | grep -c "Function ")
attention=$(echo "$usage" | grep "Function " | grep -c "attention_fwd_kernel")
backward=$(echo "$usage" | grep "Function " | grep -cE "attention_bwd_kernel|bwd_preprocess_kernel|bwd_dq_reduce_kernel")
kv_append=$(echo "$usage" | grep "Function " | grep -c "kv_append_kernel")
combine=$(echo "$usage" | grep "Function " | grep -c "combine_kernel")
# NOTE: the decode kernels are attention_fwd_kernel instances whose config is a DecodeConfig.
decode=$(echo "$usage" | grep "Function " | grep "attention_fwd_kernel" | grep -c "DecodeConfig")
# NOTE: each backward table entry is three kernels: the main one, its preprocessing and its dQ kernel.
if [ "$attention" -eq $((table + 9)) ] && [ "$decode" -eq 9 ] && [ "$backward" -eq $((3 * bwd_table)) ] &&
    [ "$kv_append" -eq 10 ] && [ "$combine" -eq 1 ] && [ "$kernels" -eq $((table + 3 * bwd_table + 28)) ]; then
  pass "$kernels kernels: $((attention - decode)) attention forward (the table's $table), $decode decode, $backward backward, 6 quantizer, 2 spectral, 10 KV append, 1 combine"
else
  fail "$kernels kernels ($attention forward with $decode decode, $backward backward, $kv_append KV append, $combine combine); expected $((table + 3 * bwd_table + 28)) ($table forward, 9 decode, $((3 * bwd_table)) backward, 6 quantizer, 2 spectral, 10 KV append, 1 combine)"
fi
bad=$(echo "$usage" | grep -A1 "Function " | grep -oE "LOCAL:[0-9]+" | grep -vc "LOCAL:0")
if [ "$bad" -eq 0 ]; then pass "no local memory in any kernel"; else fail "$bad kernels use local memory"; fi
maxreg=$(echo "$usage" | grep -oE "REG:[0-9]+" | cut -d: -f2 | sort -n | tail -1)
if [ "${maxreg:-999}" -le 255 ]; then pass "registers ≤ 255 (max $maxreg)"; else fail "a kernel uses $maxreg registers"; fi
maxshared=$(echo "$usage" | grep -oE "SHARED:[0-9]+" | cut -d: -f2 | sort -n | tail -1)
if [ "${maxshared:-999999}" -le 49152 ]; then pass "static shared memory ≤ 48 KB (max $maxshared B)"; else fail "static shared memory $maxshared B"; fi

sass="$work/lib.sass"
"$cuobjdump" --dump-sass "$lib" >"$sass" 2>/dev/null
# NOTE: the kernel's input type is in its name: FwdInput 0 is E4M3 (QGMMA), 1 is BF16 (HGMMA).
missing=$(awk 'function check() { if ((name ~ /attention_fwd_kernel/ && !((name ~ /FwdInputE1/ ? h : q) && u)) ||
                                     (name ~ /attention_bwd_kernel/ && !(h && u && !q))) print name }
               /Function :/ { check(); name = $3; q = 0; h = 0; u = 0; next }
               /QGMMA/ { q = 1 } /HGMMA/ { h = 1 } /UTMALDG/ { u = 1 }
               END { check() }' "$sass")
if [ -z "$missing" ] && grep -q QGMMA "$sass" && grep -q HGMMA "$sass" && grep -q UTMALDG "$sass"; then
  pass "every attention kernel carries its GMMA (QGMMA for E4M3, HGMMA for BF16 and the backward) and UTMALDG"
else
  fail "attention kernels without their GMMA or UTMALDG: $missing"
fi
[ "$failures" -eq 0 ] && echo "== all checks passed" || echo "== $failures check(s) failed"
[ "$failures" -eq 0 ]
