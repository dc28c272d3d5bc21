#!/usr/bin/env bash
# The install test: `cmake --install` into a scratch prefix, then a C99 host built against the
# *installed* tree, found once with find_package(fp8attn) and once with pkg-config, and run.
# Usage: run_install_test.sh <install|find_package|pkg_config> <build_dir> <work_dir> <consumer_dir>
#                            <cmake> <c_compiler> [extra C flags]
set -euo pipefail
mode=$1 build=$2 work=$3 consumer=$4 cmake=$5 cc=$6 cflags=${7:-}
prefix=$work/prefix

# The consumer must load the installed library, not the build tree's.
check_loads_installed() {
  local exe=$1 resolved
  resolved=$(ldd "$exe" | awk '/libfp8attn\.so/ {print $3}')
  echo "libfp8attn resolves to: $resolved"
  [[ "$resolved" == "$prefix"/* ]] || { echo "FAIL: not the installed library under $prefix"; exit 1; }
}

case $mode in
  install)
    rm -rf "$prefix"
    "$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
    (cd "$prefix" && find . -path ./bin -prune -o \( -type f -o -type l \) -print | sort)
    for want in include/fp8attn/fp8attn.h fp8attn.pc fp8attnConfig.cmake fp8attnConfigVersion.cmake \
                fp8attnTargets.cmake libfp8attn.so libfp8attn.so.[0-9]* LICENSE; do
      found=$(cd "$prefix" && find . -path "*/$want" -o -name "$want" | head -1)
      [[ -n "$found" ]] || { echo "FAIL: the install has no $want"; exit 1; }
    done
    # No installed text file (CMake package, pkg-config file, header) names the build tree.
    # Binaries are left out: their debug information may record the build directory.
    if grep -rlI --exclude-dir=bin "$build" "$prefix" 2>/dev/null; then
      echo "FAIL: installed files refer to the build tree $build"; exit 1
    fi
    echo "installed into $prefix"
    ;;
  find_package)
    dir=$work/find_package
    rm -rf "$dir"
    "$cmake" -S "$consumer" -B "$dir" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
      -DCMAKE_C_FLAGS="$cflags" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_BUILD_TYPE=Release \
      | grep -E 'fp8attn|Error' || { echo "FAIL: the consumer did not configure"; exit 1; }
    "$cmake" --build "$dir" >"$dir/build.log" 2>&1 || { cat "$dir/build.log"; exit 1; }
    check_loads_installed "$dir/consumer"
    "$dir/consumer"
    ;;
  pkg_config)
    dir=$work/pkg_config
    rm -rf "$dir" && mkdir -p "$dir"
    pc=$(find "$prefix" -name fp8attn.pc | head -1)
    [[ -n "$pc" ]] || { echo "FAIL: no fp8attn.pc under $prefix"; exit 1; }
    # Only the installed tree: no system pkg-config directories.
    export PKG_CONFIG_LIBDIR=$(dirname "$pc") PKG_CONFIG_PATH=
    grep -qx 'License: Apache-2.0' "$pc" || { echo "FAIL: $pc does not name the license"; exit 1; }
    pkg-config --validate fp8attn || { echo "FAIL: pkg-config --validate fp8attn"; exit 1; }
    flags=$(pkg-config --cflags --libs fp8attn)
    libdir=$(pkg-config --variable=libdir fp8attn)
    echo "pkg-config fp8attn $(pkg-config --modversion fp8attn): $flags (libdir $libdir)"
    # shellcheck disable=SC2086
    "$cc" -std=c99 -Wall -Wextra -pedantic -Werror $cflags "$consumer/consumer.c" $flags -lm -o "$dir/consumer"
    export LD_LIBRARY_PATH=$libdir
    check_loads_installed "$dir/consumer"
    "$dir/consumer"
    ;;
  *)
    echo "unknown mode $mode"; exit 2 ;;
esac
