#!/usr/bin/env bash
# Installs everything the build and the tests need on a fresh Debian 12 machine:
# Debian packages (compilers' libraries, spdlog, GoogleTest, Google Benchmark,
# OpenBLAS, doxygen, clang with libFuzzer) and a Python virtual environment in .venv (numpy, ml_dtypes).
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(cmake g++ make pkg-config libspdlog-dev libfmt-dev libgtest-dev libgmock-dev
      libbenchmark-dev libopenblas-dev doxygen nlohmann-json3-dev python3-venv
      golang-go abigail-tools  # the Go binding and the ABI check (scripts/test-bindings.sh)
      clang libclang-rt-dev)  # clang + its sanitizer and libFuzzer runtimes: tests/fuzz
# The Rust binding builds with Debian 12's Rust (1.63) or a newer one already on PATH.
command -v cargo >/dev/null 2>&1 || [ -x "${HOME:-/nonexistent}/.cargo/bin/cargo" ] || debs+=(cargo)
missing=()
for p in "${debs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements.txt
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -r scripts/requirements-nodeps.txt
