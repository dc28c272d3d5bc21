#!/usr/bin/env bash
# Compiles and runs the C, Python, Rust and Go snippets of README's "Hosts" section (and the
# Python serving step of its "Serving" section) against an
# installed tree (PKG_CONFIG_PATH and LD_LIBRARY_PATH already point at it), so the README cannot
# drift from the bindings. Usage: run_readme_snippets.sh <repo root> <work dir> <python with fp8attn>
set -euo pipefail
root=$1 work=$2 py=$3
mkdir -p "$work"
snippet() { # the first ```$1 block of section $2 (default: the Hosts section)
  awk -v lang="$1" -v section="${2:-Hosts: C, Python, Rust and Go}" '$0 == "## " section {on = 1; next}
    on && /^## / {exit} on && $0 == "```" lang {grab = 1; next} grab && /^```/ {exit} grab {print}' "$root/README.md"
}
for lang in c python rust go; do
  [[ -n "$(snippet $lang)" ]] || { echo "FAIL: README has no $lang snippet in its Hosts section"; exit 1; }
done
snippet c >"$work/snippet.c"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -pedantic -Werror "$work/snippet.c" $(pkg-config --cflags --libs fp8attn) -o "$work/snippet_c"
"$work/snippet_c"
snippet python >"$work/snippet.py"
(cd "$work" && "$py" snippet.py)
# The serving step: kv_append, then attention over the paged cache, checked against float64.
snippet python "Serving: a paged KV cache" >"$work/serving.py"
[[ -s "$work/serving.py" ]] || { echo "FAIL: README has no python snippet in its Serving section"; exit 1; }
(cd "$work" && "$py" serving.py)
mkdir -p "$work/rust/src"
snippet rust >"$work/rust/src/main.rs"
cat >"$work/rust/Cargo.toml" <<TOML
[package]
name = "readme-snippet"
version = "0.0.0"
edition = "2021"
[dependencies]
fp8attn = { path = "$root/bindings/rust/fp8attn" }
[workspace]
TOML
(cd "$work/rust" && cargo run --offline -q)
mkdir -p "$work/go"
snippet go >"$work/go/main.go"
cat >"$work/go/go.mod" <<MOD
module readmesnippet

go 1.19

require github.com/fp8attn/fp8attn/bindings/go v0.0.0
replace github.com/fp8attn/fp8attn/bindings/go => $root/bindings/go
MOD
(cd "$work/go" && go vet . && go run .)
echo "README snippets: C, Python, Rust and Go ran"
