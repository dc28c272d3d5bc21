#!/usr/bin/env bash
# Mutation testing: plants one listed single-point bug at a time, rebuilds incrementally, runs
# the default test suite and reports whether a test failed (killed) or every test passed
# (survived). Not part of CI (a full list takes hours on a small machine); run it before closing
# work that changes a checked path. How to run it and the list's format: tests/mutation/README.md.
#
# Usage: scripts/mutate.sh [-l LIST] [-b BUILD_DIR] [-k] [-n] [ID...]
#   -l LIST       the mutant list (default tests/mutation/mutants.tsv)
#   -b BUILD_DIR  an already configured build tree (default build; scripts/build.sh makes one)
#   -k            keep going: run the whole suite for every mutant (default: ctest stops at the
#                 first failing test, which is all a killed mutant needs)
#   -n            no baseline run: reuse BUILD_DIR/mutation-baseline-failures.txt
#   ID...         only these mutants (default: every mutant of the list)
# Environment:
#   FP8ATTN_MUTATE_EXCLUDE  ctest -LE regex of the labels left out (default: the slow labels
#                           emu_matrix, exhaustive, install, docs, readme, portability)
#   FP8ATTN_MUTATE_CTEST    extra ctest arguments, e.g. "-R ExtentLimits" to aim at a few tests
#                           while writing a test (a kill rate is only meaningful without it)
#   FP8ATTN_MUTATE_TARGETS  build only these targets (default: all; with FP8ATTN_MUTATE_CTEST,
#                           the executables of the tests it selects)
#   FP8ATTN_MUTATE_JOBS     parallel build and test jobs (default nproc)
# Before the first mutant the unmutated tree is built and the suite run once (the baseline):
# tests that fail there (a missing tool, a GPU-only check) are left out of every mutant's run
# and listed, so that they cannot count as kills. -n reuses the last baseline's list.
# Results: one line per mutant on stdout and in BUILD_DIR/mutation-results.tsv (id, verdict,
# seconds, the first failing test), then the kill rate: killed / (killed + survived). A mutant
# whose old string does not occur exactly once, or that does not compile, is invalid and left
# out of the rate.
set -uo pipefail
cd "$(dirname "$0")/.."

list=tests/mutation/mutants.tsv
build=build
stop=(--stop-on-failure)
baseline=1
while getopts "l:b:kn" opt; do
  case $opt in
    l) list=$OPTARG ;;
    b) build=$OPTARG ;;
    k) stop=() ;;
    n) baseline=0 ;;
    *) sed -n '7,14p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
wanted=("$@")
exclude=${FP8ATTN_MUTATE_EXCLUDE:-emu_matrix|exhaustive|install|docs|readme|portability}
jobs=${FP8ATTN_MUTATE_JOBS:-$(nproc)}
read -r -a extra <<<"${FP8ATTN_MUTATE_CTEST:-}"
build_cmd=(cmake --build "$build" -j"$jobs")
for t in ${FP8ATTN_MUTATE_TARGETS:-}; do build_cmd+=(--target "$t"); done

[ -f "$list" ] || { echo "no mutant list: $list" >&2; exit 2; }
[ -f "$build/CMakeCache.txt" ] || { echo "$build is not a configured build tree (run scripts/build.sh $build)" >&2; exit 2; }

# NOTE: the file under mutation is restored on every exit path, Ctrl-C included: a mutant left
# in the tree would be committed or fail every later build. The backup lives outside the tree.
backup_dir=$(mktemp -d)
mutated=""
restore() {
  if [ -n "$mutated" ]; then
    cp "$backup_dir/original" "$mutated" && echo "restored $mutated" >&2
    mutated=""
  fi
}
trap 'restore; rm -rf "$backup_dir"' EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

# Applies a mutation with python (exact strings, no regex or shell quoting), after checking
# that `old` occurs exactly once. In the list, \t and \n in old/new stand for a tab and a newline.
apply_mutation() {  # file old new -> exit 0 applied, 3 count ≠ 1
  python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, old, new = sys.argv[1:]
unescape = lambda s: s.replace("\\t", "\t").replace("\\n", "\n")
old, new = unescape(old), unescape(new)
text = open(path, encoding="utf-8").read()
n = text.count(old)
if n != 1:
    print(f"the old string occurs {n} times in {path}", file=sys.stderr)
    sys.exit(3)
open(path, "w", encoding="utf-8").write(text.replace(old, new))
EOF
}

baseline_list=$build/mutation-baseline-failures.txt
if [ "$baseline" = 1 ]; then
  echo "baseline: building and running the unmutated suite" >&2
  "${build_cmd[@]}" >"$backup_dir/build.log" 2>&1 || { cat "$backup_dir/build.log" >&2; exit 1; }
  ctest --test-dir "$build" --no-tests=error -j"$jobs" -LE "$exclude" "${extra[@]}" >"$backup_dir/ctest.log" 2>&1
  # ctest's summary lists each failed test as "<number> - <name> (<reason>)".
  sed -n '/The following tests FAILED:/,$p' "$backup_dir/ctest.log" |
    sed -nE 's/^[[:space:]]+[0-9]+ - (.*) \((Failed|Not Run|Timeout|SEGFAULT|Subprocess aborted|Exception)\)$/\1/p' >"$baseline_list"
fi
touch "$baseline_list"
if [ -s "$baseline_list" ]; then
  echo "left out, failing without any mutant: $(tr '\n' ' ' <"$baseline_list")" >&2
  # NOTE: ctest -E takes one regex: the names, escaped, as exact alternatives.
  extra+=(-E "^($(sed -E 's/[][\.^$*+?(){}|]/\\&/g' "$baseline_list" | paste -sd '|'))\$")
fi

# NOTE: ctest runs the tests its cost data call slowest first, so a killed mutant would wait for
# the longest tests before the quick one that fails. The baseline's costs (kept aside, since ctest
# rewrites its file after every run), inverted, make the quick tests go first; they are put back
# before every mutant's run. A test with no baseline cost (added since) counts as the quickest:
# ctest would give it cost 0 and run it last, and a new test is often the one written to kill a
# new mutant.
costs=$build/Testing/Temporary/CTestCostData.txt
baseline_costs=$build/mutation-baseline-costs.txt
fast_first=$build/mutation-fast-first-costs.txt
if [ "$baseline" = 1 ] || [ ! -f "$baseline_costs" ]; then
  [ -f "$costs" ] && cp "$costs" "$baseline_costs"
fi
rm -f "$fast_first"
if [ -f "$baseline_costs" ]; then
  ctest --test-dir "$build" -N | sed -nE 's/^ *Test +#[0-9]+: (.*)$/\1/p' >"$backup_dir/names.txt"
  awk 'FNR == NR { if (/^---/) done = 1; if (!done && NF == 3) { runs[$1] = $2; cost[$1] = $3; if ($3 > top) top = $3 } next }
       { printf "%s %s %.6f\n", $1, ($1 in runs) ? runs[$1] : 1, ($1 in cost) ? top - cost[$1] + 0.001 : top + 1 }
       END { print "---" }' "$baseline_costs" "$backup_dir/names.txt" >"$fast_first"
fi

results=$build/mutation-results.tsv
printf 'id\tverdict\tseconds\tfirst_failure\n' >"$results"
killed=0 survived=0 invalid=0
# NOTE: the list is read on fd 3, so that nothing the loop runs can eat it from stdin.
while IFS=$'\t' read -r -u 3 id file old new || [ -n "$id" ]; do
  case $id in ''|'#'*) continue ;; esac
  if [ ${#wanted[@]} -gt 0 ] && ! printf '%s\n' "${wanted[@]}" | grep -qxF "$id"; then continue; fi
  start=$(date +%s)
  verdict="" first=""
  if [ ! -f "$file" ]; then
    verdict=invalid first="no file $file"
  else
    cp -p "$file" "$backup_dir/original"
    mutated=$file
    # NOTE: every command of the loop runs with fd 3 closed (3<&-): a run of three listed mutants
    # once skipped the second, its line read away while the first one's build and tests ran.
    if ! apply_mutation "$file" "$old" "$new" 2>"$backup_dir/apply.log" 3<&-; then
      verdict=invalid first=$(cat "$backup_dir/apply.log")
    elif ! "${build_cmd[@]}" >"$backup_dir/build.log" 2>&1 3<&-; then
      verdict=invalid first="does not compile: $(grep -m1 -E 'error' "$backup_dir/build.log")"
    else
      [ -f "$fast_first" ] && cp "$fast_first" "$costs"
      ctest --test-dir "$build" --no-tests=error -j"$jobs" -LE "$exclude" "${stop[@]}" "${extra[@]}" \
        >"$backup_dir/ctest.log" 2>&1 3<&-
      if [ $? -eq 0 ]; then
        verdict=survived
      else
        verdict=killed
        first=$(grep -m1 -E '\*\*\*(Failed|Timeout|Exception)|\(Failed\)|\(Timeout\)|Not Run' "$backup_dir/ctest.log" |
                sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: //; s/ \.+/ /')
        [ -n "$first" ] || first=$(tail -n 3 "$backup_dir/ctest.log" | tr '\n' ' ')
      fi
    fi
    restore 3<&-
  fi
  case $verdict in killed) killed=$((killed + 1)) ;; survived) survived=$((survived + 1)) ;; *) invalid=$((invalid + 1)) ;; esac
  secs=$(( $(date +%s) - start ))
  printf '%-28s %-9s %5ss  %s\n' "$id" "$verdict" "$secs" "$first"
  printf '%s\t%s\t%s\t%s\n' "$id" "$verdict" "$secs" "$first" >>"$results"
done 3<"$list"

# NOTE: one last build puts the tree's objects back in step with the restored sources.
"${build_cmd[@]}" >/dev/null 2>&1 || echo "warning: the final rebuild of $build failed" >&2
valid=$((killed + survived))
if [ "$valid" -gt 0 ]; then
  echo "killed $killed of $valid valid mutants ($((100 * killed / valid)) %), survived $survived, invalid $invalid"
else
  echo "no valid mutant ran (invalid $invalid)"
fi
echo "results: $results"
[ "$valid" -gt 0 ]
