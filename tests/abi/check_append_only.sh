#!/usr/bin/env bash
# Append-only struct layouts: every field of the frozen 0.1 layout (tests/abi/compat/v0_1/
# layout.txt) keeps its offset in the current header, and no struct shrinks. New fields and
# structs may appear. Usage: check_append_only.sh <layout probe built against the current header>
#                                                  <frozen layout.txt>
set -euo pipefail
probe=$1 frozen=$2
current=$("$probe")
failures=0 checked=0
while read -r struct field value; do
  [[ -z "$struct" || "$struct" == \#* ]] && continue
  now=$(awk -v s="$struct" -v f="$field" '$1 == s && $2 == f {print $3}' <<<"$current")
  checked=$((checked + 1))
  if [[ -z "$now" ]]; then
    echo "FAIL: $struct.$field is gone from the header"; failures=$((failures + 1))
  elif [[ "$field" == sizeof ]]; then
    ((now >= value)) || { echo "FAIL: $struct shrank from $value to $now bytes"; failures=$((failures + 1)); }
  elif ((now != value)); then
    echo "FAIL: $struct.$field moved from offset $value to $now"; failures=$((failures + 1))
  fi
done <"$frozen"
echo "$checked frozen sizes and offsets checked, $failures failure(s)"
((checked > 100 && failures == 0))
