#!/usr/bin/env bash
# Each per-ISA object (the engine's query tile, the quantizer's row loops) defines global (or
# weak) symbols only inside its own namespace, fp8attn::engine_<isa> or fp8attn::quantize_<isa>.
# A shared name would let the linker keep one ISA's copy of an inline function for every build
# (lib/attention/engine/isa/query_tile_in_isa.inc).
# Usage: check_isa_symbols.sh NAMESPACE OBJECT...   (NAMESPACE: engine_avx2, quantize_avx512, ...)
set -euo pipefail
ns=$1
shift
status=0
for obj in "$@"; do
  # Defined symbols that are not local: T, W, V, D, B, R, u (unique global).
  syms=$(nm -C --defined-only "$obj" | awk '$2 ~ /^[TWVDBRu]$/ { $1 = ""; $2 = ""; sub(/^  /, ""); print }')
  [ -n "$syms" ] || { echo "FAIL: $obj defines no global symbol"; status=1; continue; }
  outside=$(grep -v "^fp8attn::${ns}::" <<<"$syms" | grep -v -E "^(guard variable for |typeinfo |vtable )?fp8attn::${ns}::" || true)
  if [ -n "$outside" ]; then
    echo "FAIL: $obj defines symbols outside fp8attn::${ns}:"
    echo "$outside"
    status=1
  else
    echo "$obj: $(wc -l <<<"$syms") global symbols, all in fp8attn::${ns}"
  fi
done
exit $status
