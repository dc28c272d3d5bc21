#!/usr/bin/env bash
# Runs the README's two commands in the order the README gives them, in a fresh `git clone` of
# this checkout's HEAD in a temporary folder, and checks that the second one's Release stage has
# tests. Usage: run_readme_commands.sh SOURCE_DIR. Exit 77 (skip) when SOURCE_DIR is no git
# checkout (a source tarball has no history to clone).
#
# NOTE: the design keeps this cheap enough for CI (2 cores) while still catching the bug it is
# for, a CMake cache that the first command leaves behind and the second one inherits:
# - The main job runs for real (install, configure, build, run) but on a tiny problem
#   (--heads 1 --seqlen 256), so its cost is the build of the core and the tool, not the FP64
#   oracle on 8 × 4096 tokens.
# - The test command runs as `scripts/run-tests.sh --list`: the same dependency install and the
#   same stage-1 configure of the same build folder, then `ctest -N` instead of building and
#   running the suite a second time inside the suite. What went wrong before (a Release stage
#   with "No tests were found") shows up at configure time, so listing is enough: the check
#   requires tests in every label the old bug dropped (install, docs, python, abi).
# - The clone's .venv is a link to this checkout's: the Python environment holds large
#   downloads (model weights) that CI already installed, and its content is not what this test
#   checks. Everything else (source, build folder, CMake cache) is fresh.
# Only committed files are cloned: run this on a clean checkout, as CI does.
set -euo pipefail
src=$1
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || { echo "SKIP: $src is not a git checkout"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/fp8attn-readme.XXXXXX")
trap 'rm -rf "$work"' EXIT
git clone -q "$src" "$work/clone"
cd "$work/clone"
[ -d "$src/.venv" ] && ln -s "$src/.venv" .venv

# The README's quick start, in order: exactly these two commands.
mapfile -t commands < <(sed -n '/^```sh$/,/^```$/p' README.md | grep -E '^bash scripts/' | sed 's/[[:space:]]*#.*$//')
expected=("bash scripts/run-main-job.sh" "bash scripts/run-tests.sh")
if [ "${commands[*]:-}" != "${expected[*]}" ]; then
  echo "FAIL: the README's quick start is '${commands[*]:-}', this test runs '${expected[*]}'"
  exit 1
fi

echo "== ${commands[0]} --heads 1 --seqlen 256 --repeats 1"
${commands[0]} --heads 1 --seqlen 256 --repeats 1 | tee main-job.out
grep -q '^throughput:' main-job.out || { echo "FAIL: the main job printed no throughput line"; exit 1; }

echo "== ${commands[1]} --list"
${commands[1]} --list > tests.out || { cat tests.out; echo "FAIL: the test command's Release stage has no tests"; exit 1; }
tail -1 tests.out
grep -q '^FP8ATTN_BUILD_TESTS:BOOL=ON$' build/CMakeCache.txt || { echo "FAIL: the Release stage built without tests"; exit 1; }
for label in abi install docs python; do
  n=$(ctest --test-dir build -N -L "$label" | sed -n 's/^Total Tests: //p')
  echo "label $label: ${n:-0} tests"
  [ "${n:-0}" -gt 0 ] || { echo "FAIL: the test command's Release stage has no '$label' tests"; exit 1; }
done
echo "PASS: the main job ran, then the test command's Release stage lists its tests"
