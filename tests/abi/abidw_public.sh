#!/usr/bin/env bash
# The ABI of libfp8attn's public interface as abixml: exported functions and the types of
# fp8attn.h only, without paths, so that a baseline is comparable across checkouts and builds.
# Usage: abidw_public.sh <libfp8attn.so> <source include dir> <out.abixml>
set -euo pipefail
abidw --exported-interfaces-only --drop-private-types --headers-dir "$2/fp8attn" --no-show-locs --no-corpus-path \
  --out-file "$3" "$1"
