#!/usr/bin/env bash
# The host bindings against the INSTALLED tree (run-tests.sh stage 4):
#   build libfp8attn (-O1 -g: abidiff needs debug information), `cmake --install` it into
#   a prefix, then check its ABI against tests/abi/baseline, run a host built against the 0.1
#   header, and run the Python (pytest, from the wheel `pip install ./bindings/python` makes of
#   the installed library, in a fresh venv, pointed at the prefix by FP8ATTN_LIBRARY, then on
#   the wheel's own copy), Rust
#   (cargo test) and Go (go vet, go test under GODEBUG=cgocheck=1) tests against that prefix; their
#   layout tests compile the C probe themselves, as a user's plain `cargo test` / `go test` does.
# A missing toolchain is a failure, and so is a test runner that finds no tests.
# Usage: scripts/test-bindings.sh [build dir, default build-bindings]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$(mkdir -p "${1:-build-bindings}" && cd "${1:-build-bindings}" && pwd)
prefix=$dir/prefix
fail() { echo "FAIL: $*"; exit 1; }

[[ -x "${HOME:-}/.cargo/bin/cargo" ]] && export PATH="$PATH:$HOME/.cargo/bin"
for tool in cc cmake python3 pkg-config cargo rustc go gofmt abidw abidiff readelf nm; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/install-deps.sh)"
done
rust_minor=$(rustc --version | sed -E 's/^rustc 1\.([0-9]+).*/\1/')
((rust_minor >= 63)) || fail "rustc $(rustc --version) is older than 1.63 (Debian 12's)"
echo "toolchains: $(cc --version | head -1); $(rustc --version); $(go version); $(python3 --version)"

echo "-- build and install into $prefix"
# NOTE: -O1 -g: abidiff needs the full debug information (-g), not -O2; the bindings' tests run
# small problems, and -O1 compiles the library in about two thirds of the time.
cmake -S . -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFP8ATTN_BUILD_CUDA=OFF -DFP8ATTN_BUILD_TESTS=OFF \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" \
  -DFP8ATTN_BUILD_TOOLS=OFF >"$dir/configure.log" || { cat "$dir/configure.log"; exit 1; }
cmake --build "$dir/build" --target fp8attn -j"$(nproc)"
rm -rf "$prefix"
cmake --install "$dir/build" --prefix "$prefix" >"$dir/install.log"
pc=$(find "$prefix" -name fp8attn.pc | head -1)
[[ -n "$pc" ]] || fail "no fp8attn.pc under $prefix"
libdir=$(cd "$(dirname "$pc")/.." && pwd)
include=$prefix/include
cmp "$include/fp8attn/fp8attn.h" include/fp8attn/fp8attn.h || fail "the installed header is not the source header"
# Only the installed tree: no system pkg-config folder, no build tree on the loader path.
export PKG_CONFIG_PATH=$libdir/pkgconfig PKG_CONFIG_LIBDIR=$libdir/pkgconfig LD_LIBRARY_PATH=$libdir
unset FP8ATTN_LIB_DIR FP8ATTN_INCLUDE_DIR
cc -std=c99 -Wall -Wextra -pedantic -Werror -I"$include" bindings/layout_probe/fp8attn_layout_probe.c \
  -o "$dir/layout_probe"
export FP8ATTN_LAYOUT_PROBE=$dir/layout_probe FP8ATTN_HEADER=$include/fp8attn/fp8attn.h
# The CUDA backend is looked up here first: nothing, so "no GPU" is deterministic.
export FP8ATTN_CUDA_BACKEND=$dir/no-such-dir/libfp8attn_cuda.so

echo "-- ABI of the installed library against tests/abi/baseline"
bash tests/abi/check_abi.sh "$libdir/libfp8attn.so" "$root/include"
bash tests/abi/check_append_only.sh "$dir/layout_probe" tests/abi/compat/v0_1/layout.txt
cc -std=c99 -Wall -Wextra -pedantic -Werror -Itests/abi/compat/v0_1 tests/abi/test_v0_1_host.c \
  $(pkg-config --libs fp8attn) -lm -o "$dir/v0_1_host"
"$dir/v0_1_host"

echo "-- Python: pip install ./bindings/python (a wheel of the installed library) in a fresh venv"
rm -rf "$dir/venv"
python3 -m venv "$dir/venv"
py=$dir/venv/bin/python
"$py" -m pip install -q --disable-pip-version-check numpy ml_dtypes pytest mypy
"$py" -m mypy --ignore-missing-imports bindings/python/src/fp8attn
# NOTE: the wheel packages the library installed above (FP8ATTN_PYTHON_PREBUILT) instead of
# compiling the whole library a second time in this stage; the wheel's packaging (pyproject,
# scikit-build-core, the install component, the ctypes loader) is what this checks, and the
# library's own build is the one above. `pip install ./bindings/python` without the setting
# builds from source, as a user's install does.
env -u PKG_CONFIG_LIBDIR -u PKG_CONFIG_PATH "$py" -m pip install -q --disable-pip-version-check \
  --config-settings=cmake.define.FP8ATTN_PYTHON_PREBUILT="$(readlink -f "$libdir/libfp8attn.so")" ./bindings/python
(cd "$dir" && "$py" -c 'import fp8attn, sys; assert "site-packages" in fp8attn.__file__, fp8attn.__file__') \
  || fail "fp8attn is not imported from the installed wheel"
run_pytest() {
  local rc=0
  (cd "$dir" && "$py" -m pytest -p no:cacheprovider -q "$root/bindings/python/tests") || rc=$?
  ((rc != 5)) || fail "pytest collected no tests"
  ((rc == 0)) || fail "pytest failed ($rc) $*"
}
FP8ATTN_LIBRARY=$libdir/libfp8attn.so run_pytest "with FP8ATTN_LIBRARY=$libdir/libfp8attn.so"
run_pytest "with the wheel's own libfp8attn.so"

# NOTE: Rust's and Go's layout tests run without FP8ATTN_LAYOUT_PROBE, as a user's plain `cargo
# test` and `go test` do: each compiles the probe itself against the header that fp8attn.pc names.
# FP8ATTN_LAYOUT_REQUIRED=1 makes a test that cannot build it fail instead of skipping.
echo "-- Rust: cargo test against $pc"
log=$dir/cargo-test.log
(cd bindings/rust && env -u FP8ATTN_LAYOUT_PROBE FP8ATTN_LAYOUT_REQUIRED=1 \
  cargo test --offline --target-dir "$dir/cargo-target" 2>&1) | tee "$log"
grep -q '^test struct_layouts_match_the_c_probe \.\.\. ok$' "$log" || fail "the Rust layout test did not pass"
ran=$(awk '/^test result: ok\./ {n += $4} END {print n + 0}' "$log")
((ran >= 12)) || fail "cargo ran only $ran tests"
echo "cargo: $ran tests passed"

echo "-- Go: go vet and go test (GODEBUG=cgocheck=1)"
export GOPATH=$dir/gopath GOCACHE=$dir/gocache GOFLAGS=-mod=mod
[[ -z "$(cd bindings/go && gofmt -l .)" ]] || fail "gofmt: $(cd bindings/go && gofmt -l .)"
(cd bindings/go && go vet ./...)
log=$dir/go-test.log
(cd bindings/go && env -u FP8ATTN_LAYOUT_PROBE FP8ATTN_LAYOUT_REQUIRED=1 GODEBUG=cgocheck=1 \
  go test -count=1 -v ./... 2>&1) | tee "$log"
ran=$(grep -c '^--- PASS' "$log" || true)
grep -q '^--- FAIL' "$log" && fail "go test failed"
grep -q '^--- PASS: TestLayoutMatchesTheCProbe' "$log" || fail "the Go layout test did not pass"
((ran >= 6)) || fail "go test ran only $ran tests"
echo "go: $ran tests passed"

echo "-- README: the Hosts section's snippets, against the installed tree"
bash tests/docs/run_readme_snippets.sh "$root" "$dir/readme" "$py"
echo "bindings: all passed against $prefix"
