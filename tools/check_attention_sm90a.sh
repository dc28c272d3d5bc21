#!/usr/bin/env bash
# Static checks on the sm_90a build of the attention forward, E4M3 and BF16
# (kernels/sm90/attention/attention_fwd_sm90a.cu), for every kernel of its instantiation table:
#   1. ptxas -v -warn-spills -warn-lmem-usage: no spills, no stack frame, no local memory, no
#      C7510..C7515 (wgmma serialized; C7513, an input register defined inside a wgmma pipeline
#      stage, is what a BF16 P cast before the P·V wait produced), no C7508 (setmaxnreg ignored);
#   2. SASS: the kernel's MMA present (QGMMA for E4M3, HGMMA for BF16) and the other absent, and
#      UTMALDG, and UTMASTG exactly in the kernels with an O stage (FwdConfig::kTmaOut: O
#      through TMA stores, fwd_epilogue.hpp); the consumers' setmaxnreg is the config's budget, ≤ 240 registers, and the
#      budgets fit the launch pool (check_register_pool);
#   3. dynamic shared memory ≤ 227 KB (from the kernels' own storage types); every UTMALDG carries
#      an L2 cache policy (K and V evict-last, Q evict-first: kernels/arch/tma.hpp);
#   4. a table per kernel: registers, shared memory, and the counts of its GMMA, MUFU.EX2, SHFL and
#      BAR in the consumers' main loop (first WARPGROUP.ARRIVE to last WARPGROUP.DEPBAR);
#   5. a table of the consumer main loop's SASS per KV block (tools/sass_mainloop_counts.py: GMMA,
#      MUFU.EX2, FMNMX, FFMA, SHFL, all instructions of the loop body, and those no forward branch
#      inside it can skip) against the floor of GMMA + one MUFU.EX2,
#      FMNMX and FFMA per score; fails on LDL/STL anywhere and on SHFL above the shuffles the
#      loop's row reductions need (4 in a loop of plain blocks, the max's butterflies; 8, + 2
#      every-block, in the kernels without one: docs/kernels.md; P takes none); the target
#      budget total ≤ 1.2 × floor is printed as met / not met (not failing yet).
# Exit 0 when every check passes, 1 when one fails, 77 when nvcc is not available.
# Usage: tools/check_attention_sm90a.sh [work_dir [compile_dir]]
# compile_dir: where the library build keeps its compile of the .cu (cmake/nvcc_ptxas_log.sh);
# without it the script compiles the .cu itself.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
source_file="$root/kernels/sm90/attention/attention_fwd_sm90a.cu"
# shellcheck source=tools/sm90_check_common.sh
source "$root/tools/sm90_check_common.sh"
require_nvcc "the attention kernel's sm_90a checks"
echo "== sm_90a static checks of $source_file"

sm90a_compile_products "$source_file" "${2:-}" "the attention kernels"

shapes="$work/kernels.txt"
print_kernel_table print_fwd_kernels "$shapes"
expected=$(wc -l <"$shapes")
compiled=$(grep -c "Compiling entry function '.*attention_fwd_kernel" "$log")
if [ "$compiled" -eq "$expected" ]; then pass "$compiled kernels named attention_fwd_kernel, one per table entry"; else fail "$compiled attention_fwd_kernel entries, table has $expected"; fi
check_ptxas_log "$log"

sass="$work/attention_fwd.sass"
dump_sass "$cubin" "$sass"
# Every TMA load carries an L2 cache policy (arch::L2Evict: K and V evict-last, Q evict-first,
# decode's K and V evict-first): in SASS, a desc[UR..] operand on UTMALDG.
unhinted=$(grep "UTMALDG" "$sass" | grep -vc "desc\[")
hinted=$(grep "UTMALDG" "$sass" | grep -c "desc\[")
if [ "$unhinted" -eq 0 ] && [ "$hinted" -gt 0 ]; then pass "every UTMALDG ($hinted) carries an L2 cache policy"; else fail "$unhinted UTMALDG without an L2 cache policy"; fi

printf "\n| kernel (input, head_dim, promotion, telemetry) | threads | ptxas regs | consumer regs | smem (B) | GMMA | MUFU.EX2 | SHFL | BAR |\n"
printf "|---|---|---|---|---|---|---|---|---|\n"
bad=0
tma_kernels=0
while read -r name threads smem producer consumer mma _ _ tma_out; do
  body="$work/$name.sass"
  awk -v pat="$name" '/Function :/ { on = index($0, pat) > 0; next } on' "$sass" >"$body"
  loop="$work/$name.loop.sass"
  first=$(grep -n "WARPGROUP.ARRIVE" "$body" | head -1 | cut -d: -f1)
  last=$(grep -n "WARPGROUP.DEPBAR" "$body" | tail -1 | cut -d: -f1)
  sed -n "${first:-1},${last:-1}p" "$body" >"$loop"
  count() { grep -c "$1" "$2"; }
  regs=$(grep -A3 "Compiling entry function '.*$name" "$log" | grep -oE "Used [0-9]+ registers" | grep -oE "[0-9]+")
  maxreg=$(grep -oE "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0x[0-9a-f]+" "$body" | grep -oE "0x[0-9a-f]+$" | head -1)
  maxreg=$((maxreg))
  hd=$(echo "$name" | sed -E 's/FwdConfigILi([0-9]+).*/\1/')
  promo=$(echo "$name" | sed -E 's/.*PvPromotionE([0-9]).*/\1/')
  tel=$(echo "$name" | sed -E 's/.*ELb([01])E.*/\1/')
  other=QGMMA; [ "$mma" = QGMMA ] && other=HGMMA
  input=E4M3; [ "$mma" = HGMMA ] && input=BF16
  printf "| %s, %s, %s, %s | %s | %s | %s | %s | %s %s | %s | %s | %s |\n" "$input" "$hd" \
    "$(echo off every-block every-N | cut -d' ' -f$((promo + 1)))" "$tel" "$threads" "$regs" "$maxreg" "$smem" \
    "$(count "$mma" "$loop")" "$mma" "$(count MUFU.EX2 "$loop")" "$(count SHFL "$loop")" "$(count 'BAR\.' "$loop")"
  [ "$(count "$mma" "$body")" -gt 0 ] && [ "$(count UTMALDG "$body")" -gt 0 ] || { echo "   $name: no $mma or UTMALDG"; bad=1; }
  [ "$(count "$other" "$body")" -eq 0 ] || { echo "   $name: $other in a $input kernel"; bad=1; }
  [ "$maxreg" -eq "$consumer" ] && [ "$maxreg" -le 240 ] || { echo "   $name: consumer setmaxnreg $maxreg, config $consumer (≤ 240)"; bad=1; }
  [ "$smem" -le $((227 * 1024)) ] || { echo "   $name: $smem bytes of shared memory"; bad=1; }
  # The kernels with an O stage (FwdConfig::kTmaOut) store O with TMA (UTMASTG); the others never do.
  stores=$(count UTMASTG "$body")
  if [ "$tma_out" = 1 ]; then [ "$stores" -gt 0 ] || { echo "   $name: an O stage but no UTMASTG"; bad=1; }
  else [ "$stores" -eq 0 ] || { echo "   $name: UTMASTG without an O stage"; bad=1; }; fi
  tma_kernels=$((tma_kernels + tma_out))
  check_register_pool "$name" "$threads" "$regs" "$producer" "$consumer" || bad=1
done <"$shapes"
echo
if [ "$bad" -eq 0 ]; then pass "every kernel: its GMMA (QGMMA for E4M3, HGMMA for BF16) and UTMALDG in SASS, UTMASTG exactly in the $tma_kernels with an O stage, consumers at their budget ≤ 240 registers, budgets within the launch pool, shared memory ≤ 227 KB"; else fail "see above"; fi

# The consumer main loop per KV block (one iteration of the innermost loop with GMMA and MUFU.EX2).
printf "\n| kernel (input, head_dim, promotion, telemetry) | tile | consumer WGs | GMMA N·K | GMMA | MUFU.EX2 | FMNMX | FFMA | SHFL | total | unconditional | floor | total / floor | LDL/STL | SHFL ≤ 4 | total ≤ 1.2 × floor |\n"
printf "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
shfl_notes=""
bad=0
met_shfl=0
met_total=0
while read -r name threads _ _ _ mma block_m block_n _; do
  hd=$(echo "$name" | sed -E 's/FwdConfigILi([0-9]+).*/\1/')
  promo=$(echo "$name" | sed -E 's/.*PvPromotionE([0-9]).*/\1/')
  tel=$(echo "$name" | sed -E 's/.*ELb([01])E.*/\1/')
  input=E4M3; [ "$mma" = HGMMA ] && input=BF16
  read -r iters gmma ex2 fmnmx ffma shfl total always lmem floor nk < <(python3 "$root/tools/sass_mainloop_counts.py" "$work/$name.sass" "$block_n")
  ratio=$(awk -v t="$total" -v f="$floor" 'BEGIN { printf "%.2f", (f > 0 ? t / f : 0) }')
  shfl_ok=$(awk -v s="$shfl" 'BEGIN { print (s <= 4) ? "met" : "not met" }')
  total_ok=$(awk -v t="$total" -v f="$floor" 'BEGIN { print (t <= 1.2 * f) ? "met" : "not met" }')
  [ "$shfl_ok" = met ] && met_shfl=$((met_shfl + 1))
  [ "$total_ok" = met ] && met_total=$((met_total + 1))
  printf "| %s, %s, %s, %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$input" "$hd" \
    "$(echo off every-block every-N | cut -d' ' -f$((promo + 1)))" "$tel" "${block_m}x$block_n" "$((threads / 128 - 1))" "$nk" "$gmma" "$ex2" "$fmnmx" "$ffma" \
    "$shfl" "$total" "$always" "$floor" "$ratio" "$lmem" "$shfl_ok" "$total_ok"
  [ "$iters" -ge 1 ] || { echo "   $name: no consumer main loop (a backward branch over GMMA and MUFU.EX2) found"; bad=1; }
  [ "$lmem" -eq 0 ] || { echo "   $name: $lmem LDL/STL instructions (local memory)"; bad=1; }
  # The shuffles the data movement needs (docs/kernels.md, the SASS budget): a row reduction is
  # two butterflies; the max and the stabilized variant's tie count (in its branch) take them for
  # each of the two rows (8). P takes none: E4M3's A fragment is the accumulator in place
  # (kernels/sm90/pv_key_order.hpp), BF16's is its layout.
  # The every-block kernels add two, in a branch taken only with a paged cache's per-token
  # descales: the quad max of the block's V descales (fwd_kv_token_scales.hpp).
  # A kernel with a loop of plain blocks (fwd_mainloop.hpp: block_is_plain; full, unmasked blocks of
  # the standard softmax) counts that loop, whose body holds only the max's butterflies: 4.
  # The kernels without one (the every-N kernels with telemetry, the every-block kernels at
  # head_dims 128 and 256, where the loop's second copy of the step spilled) keep 8 (+ 2).
  shfl_max=8
  [ "$promo" = 1 ] && shfl_max=$((shfl_max + 2))
  plain_loop=1
  { [ "$promo" = 2 ] && [ "$tel" = 1 ]; } && plain_loop=0
  { [ "$promo" = 1 ] && [ "$hd" -gt 64 ]; } && plain_loop=0
  [ "$plain_loop" = 1 ] && shfl_max=4
  [ "$shfl" -le "$shfl_max" ] || shfl_notes="$shfl_notes   $name: $shfl SHFL per KV block, budget $shfl_max
"
done <"$shapes"
echo
if [ "$bad" -eq 0 ]; then pass "every kernel: a consumer main loop found, counted per KV block; no LDL/STL (local memory)"; else fail "see above"; fi
if [ -z "$shfl_notes" ]; then pass "every kernel: SHFL per KV block ≤ 4 with a plain-block loop, else ≤ 8 (+ 2 every-block)"; else printf "%s" "$shfl_notes"; fail "SHFL above the budget"; fi
echo "budget SHFL ≤ 4 per KV block: met by $met_shfl of $expected kernels (enforced where a plain-block loop exists)"
echo "budget total ≤ 1.2 × (GMMA + MUFU.EX2 + FMNMX + FFMA floor) per KV block: met by $met_total of $expected kernels (not enforced yet)"

if [ "$failures" -eq 0 ]; then echo "== all attention sm_90a static checks passed"; exit 0; fi
echo "== $failures check(s) failed"
exit 1
