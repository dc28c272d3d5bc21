#!/usr/bin/env bash
# Static checks on the sm_90a build of the BF16 attention backward
# (kernels/sm90/attention/attention_bwd_sm90a.cu), for every kernel of its instantiation table
# (the main kernel per head dim, and its preprocessing and dQ kernels):
#   1. ptxas -v -warn-spills -warn-lmem-usage: no spills, no stack frame, no local memory, no
#      C7510..C7515 (wgmma serialized), no C7508 (setmaxnreg ignored);
#   2. SASS of each main kernel: HGMMA and UTMALDG present, no QGMMA; the consumers' setmaxnreg is
#      the config's budget, ≤ 240 registers, and the budgets fit the launch pool (check_register_pool);
#   3. dynamic shared memory ≤ 227 KB (from the kernels' own storage types);
#   4. a table per main kernel: registers, shared memory, and the counts of HGMMA, MUFU.EX2, SHFL
#      and BAR in the consumers' main loop (first WARPGROUP.ARRIVE to last WARPGROUP.DEPBAR).
# Exit 0 when every check passes, 1 when one fails, 77 when nvcc is not available.
# Usage: tools/check_attention_bwd_sm90a.sh [work_dir [compile_dir]]
# compile_dir: where the library build keeps its compile of the .cu (cmake/nvcc_ptxas_log.sh);
# without it the script compiles the .cu itself.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
source_file="$root/kernels/sm90/attention/attention_bwd_sm90a.cu"
# shellcheck source=tools/sm90_check_common.sh
source "$root/tools/sm90_check_common.sh"
require_nvcc "the attention backward's sm_90a checks"
echo "== sm_90a static checks of $source_file"

sm90a_compile_products "$source_file" "${2:-}" "the attention backward"

shapes="$work/kernels.txt"
print_kernel_table print_bwd_kernels "$shapes"
expected=$(wc -l <"$shapes")
compiled=$(grep -c "Compiling entry function '.*attention_bwd_kernel" "$log")
helpers=$(grep -cE "Compiling entry function '.*(bwd_preprocess_kernel|bwd_dq_reduce_kernel)" "$log")
if [ "$compiled" -eq "$expected" ] && [ "$helpers" -eq $((2 * expected)) ]; then
  pass "$compiled kernels named attention_bwd_kernel (one per table entry) and $helpers preprocessing/dQ kernels"
else
  fail "$compiled attention_bwd_kernel and $helpers helper entries; the table has $expected (and twice as many helpers)"
fi
check_ptxas_log "$log"

sass="$work/attention_bwd.sass"
dump_sass "$cubin" "$sass"

printf "\n| kernel (head_dim) | threads | ptxas regs | consumer regs | smem (B) | HGMMA | MUFU.EX2 | SHFL | BAR |\n"
printf "|---|---|---|---|---|---|---|---|---|\n"
bad=0
while read -r name threads smem producer consumer mma; do
  body="$work/$name.sass"
  awk -v pat="$name" '/Function :/ { on = index($0, pat) > 0 && index($0, "attention_bwd_kernel") > 0; next } on' \
    "$sass" >"$body"
  loop="$work/$name.loop.sass"
  first=$(grep -n "WARPGROUP.ARRIVE" "$body" | head -1 | cut -d: -f1)
  last=$(grep -n "WARPGROUP.DEPBAR" "$body" | tail -1 | cut -d: -f1)
  sed -n "${first:-1},${last:-1}p" "$body" >"$loop"
  count() { grep -c "$1" "$2"; }
  regs=$(grep -A3 "Compiling entry function '.*attention_bwd_kernel.*$name" "$log" | grep -oE "Used [0-9]+ registers" | grep -oE "[0-9]+")
  maxreg=$(grep -oE "USETMAXREG.TRY_ALLOC.CTAPOOL UP[0-9], 0x[0-9a-f]+" "$body" | grep -oE "0x[0-9a-f]+$" | head -1)
  maxreg=$((maxreg))
  hd=$(echo "$name" | sed -E 's/BwdConfigILi([0-9]+).*/\1/')
  printf "| BF16 backward, %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$hd" "$threads" "$regs" "$maxreg" "$smem" \
    "$(count "$mma" "$loop")" "$(count MUFU.EX2 "$loop")" "$(count SHFL "$loop")" "$(count 'BAR\.' "$loop")"
  [ "$(count HGMMA "$body")" -gt 0 ] && [ "$(count UTMALDG "$body")" -gt 0 ] || { echo "   $name: no HGMMA or UTMALDG"; bad=1; }
  [ "$(count QGMMA "$body")" -eq 0 ] || { echo "   $name: QGMMA in a BF16 kernel"; bad=1; }
  [ "$maxreg" -eq "$consumer" ] && [ "$maxreg" -le 240 ] || { echo "   $name: consumer setmaxnreg $maxreg, config $consumer (≤ 240)"; bad=1; }
  [ "$smem" -le $((227 * 1024)) ] || { echo "   $name: $smem bytes of shared memory"; bad=1; }
  check_register_pool "$name" "$threads" "$regs" "$producer" "$consumer" || bad=1
done <"$shapes"
echo
if [ "$bad" -eq 0 ]; then pass "every backward kernel: HGMMA and UTMALDG in SASS, no QGMMA, consumers at their budget ≤ 240 registers, budgets within the launch pool, shared memory ≤ 227 KB"; else fail "see above"; fi

if [ "$failures" -eq 0 ]; then echo "== all attention backward sm_90a static checks passed"; exit 0; fi
echo "== $failures check(s) failed"
exit 1
