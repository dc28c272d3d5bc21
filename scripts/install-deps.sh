#!/usr/bin/env bash
# Installs everything the build and the tests need on a fresh Debian 12 machine:
# Debian packages (compilers' libraries, spdlog, GoogleTest, Google Benchmark,
# OpenBLAS, doxygen, clang with libFuzzer, qemu-user, Go, abigail-tools, Chromium, Tesseract and
# OpenMPI) and a Python virtual
# environment in .venv (numpy, ml_dtypes).
# Idempotent: a second run only checks.
# `install-deps.sh --main-job` installs only what scripts/run-main-job.sh needs to build and run
# the main job (compilers, CMake, spdlog/fmt headers, OpenBLAS, Google Benchmark for the tools'
# configure, nlohmann-json): no test frameworks, no Python environment.
set -euo pipefail
cd "$(dirname "$0")/.."

main_job_debs=(cmake g++ make ccache pkg-config libspdlog-dev libfmt-dev libbenchmark-dev libopenblas-dev
               nlohmann-json3-dev)
# qemu-user: tests/portability runs the default build on an emulated Haswell (qemu-x86_64).
debs=("${main_job_debs[@]}" libgtest-dev libgmock-dev doxygen python3-venv git qemu-user
      golang-go abigail-tools  # the Go binding and the ABI check (scripts/test-bindings.sh)
      clang libclang-rt-dev  # clang + its sanitizer and libFuzzer runtimes: tests/fuzz
      chromium tesseract-ocr  # tests/docs renders the API page to PNG and reads it back
      libopenmpi-dev openmpi-bin)  # examples/context_parallel: ring attention over MPI ranks
# The Rust binding builds with Debian 12's Rust (1.63) or a newer one already on PATH.
command -v cargo >/dev/null 2>&1 || [ -x "${HOME:-/nonexistent}/.cargo/bin/cargo" ] || debs+=(cargo)
main_job=0
[ "${1:-}" = "--main-job" ] && { main_job=1; debs=("${main_job_debs[@]}"); }
missing=()
for p in "${debs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

((main_job)) && exit 0

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements.txt
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -r scripts/requirements-nodeps.txt
