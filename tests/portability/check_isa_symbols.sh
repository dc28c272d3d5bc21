#!/usr/bin/env bash
# Each per-ISA object (the engine's query tile, the quantizer's row loops) defines global (or
# weak) symbols only inside its own namespace, fp8attn::engine_<isa> or fp8attn::quantize_<isa>.
# A shared name would let the linker keep one ISA's copy of an inline function for every build
# (lib/attention/engine/isa/query_tile_in_isa.cpp).
# Usage: check_isa_symbols.sh NAMESPACE OBJECT...   (NAMESPACE: engine_avx2, quantize_avx512, ...)
set -euo pipefail
ns=$1
shift
status=0
for obj in "$@"; do
  # Defined symbols that are not local: T, W, V, D, B, R, u (unique global).
  syms=$(nm -C --defined-only "$obj" | awk '$2 ~ /^[TWVDBRu]$/ { $1 = ""; $2 = ""; sub(/^  /, ""); print }')
  [ -n "$syms" ] || { echo "FAIL: $obj defines no global symbol"; status=1; continue; }
  # NOTE: nm -C prints a function template's return type first ("void fp8attn::ns::f<4, 64>(...)"),
  # hence the optional leading type (no '<' or ',' in it, so a template argument cannot match).
  outside=$(grep -v -E "^(guard variable for |typeinfo |vtable |[A-Za-z_][A-Za-z0-9_:*& ]* )?fp8attn::${ns}::" <<<"$syms" || true)
  if [ -n "$outside" ]; then
    echo "FAIL: $obj defines symbols outside fp8attn::${ns}:"
    echo "$outside"
    status=1
  else
    echo "$obj: $(wc -l <<<"$syms") global symbols, all in fp8attn::${ns}"
  fi
done
exit $status
