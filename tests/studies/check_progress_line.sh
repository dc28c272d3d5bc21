#!/usr/bin/env bash
# A long-running study says what it is doing on a terminal and stays quiet anywhere else
# (long work must not look like a hang). The study runs twice on a tiny sweep: under `script`,
# which gives it a pseudo-terminal, its stderr must carry the "[fp8attn] ..." progress line naming
# the current step; with stderr on a pipe, stderr must be empty.
# Usage: check_progress_line.sh <accumulator_study binary> <scratch dir>
set -euo pipefail
tool=$1 dir=$2
mkdir -p "$dir"
args=(--seqlens 640 --intervals 0,4 --rows 16 --seeds 2 --out "$dir/acc.csv")
command -v script >/dev/null || { echo "SKIP: 'script' (util-linux) is not installed"; exit 77; }

# On a pipe: the CSV and the table appear, and stderr stays empty.
"$tool" "${args[@]}" >"$dir/piped.out" 2>"$dir/piped.err"
grep -q "| 640 |" "$dir/piped.out" || { echo "FAIL: the study printed no table"; cat "$dir/piped.out"; exit 1; }
if [[ -s "$dir/piped.err" ]]; then
  echo "FAIL: the study wrote to stderr on a pipe:"; cat "$dir/piped.err"; exit 1
fi

# On a terminal: the progress line names the study and the step, and ends with "done in".
printf -v cmd '%q ' "$tool" "${args[@]}"
script -qec "$cmd" /dev/null >"$dir/tty.out" 2>&1
for want in "[fp8attn] accumulator study" "640 keys, draw 1/2" "done in"; do
  grep -qF "$want" "$dir/tty.out" || { echo "FAIL: no '$want' on the terminal:"; cat -v "$dir/tty.out"; exit 1; }
done
echo "progress line shown on a terminal, silent on a pipe"
