#!/usr/bin/env bash
# Stages a CUDA build for a GPU machine that cannot build it (no package registry, or no time to
# compile the sm_90a kernels): the GPU tests' executables, the libraries, the CTest files and the
# non-system shared libraries they load (OpenBLAS and its Fortran runtime, xz-compressed), plus
# run.sh, which runs scripts/run-gpu-checks.sh over them there.
# Usage (here):  scripts/stage-gpu-build.sh BUILD_DIR OUT_DIR     (BUILD_DIR built with CUDA on)
# Then (there, in a checkout of the same commit with OUT_DIR inside it):  bash OUT_DIR/run.sh
# The GPU machine needs the same CUDA major version (libcudart/libcublasLt are not staged).
# NOTE: CTest's files name the build by its absolute path, so run.sh links that path to the
# staged copy when it is free there.
set -euo pipefail
# The path CTest's files name: where the build was configured (CMakeCache.txt).
build=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$1/CMakeCache.txt")
[ -n "$build" ] || { echo "$1: no CMakeCache.txt"; exit 1; }
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/build" "$out/lib"
cd "$build"
executables=$(ctest -N -L cuda --show-only=json-v1 | python3 -c '
import json, sys
print("\n".join(sorted({t["command"][0] for t in json.load(sys.stdin)["tests"]})))')
{
  find . \( -name CTestTestfile.cmake -o -name "*_tests*.cmake" -o -name "*_include*.cmake" \) -print
  for e in $executables tests/backend/test_cuda_backend_loading tests/backend/libfp8attn_fake_cuda_backend.so \
           tools/cuda_bench/fp8attn_cuda_bench tools/cuda_bench/fp8attn_decode_cuda_bench; do
    [ -e "$e" ] || [ -e "$build/$e" ] && realpath --relative-to="$build" "$e"
  done
  ls capi/*.so*
} | tar cf - -T - | (cd "$out/build" && tar xf -)
for so in $(ldd "$build"/capi/libfp8attn.so tools/cuda_bench/fp8attn_cuda_bench tools/cuda_bench/fp8attn_decode_cuda_bench 2>/dev/null |
            grep -oE "/[^ ]*(openblas|gfortran|quadmath)[^ ]*" | sort -u); do
  xz -1 -c "$so" >"$out/lib/$(basename "$so").xz"  # -1: fast; the libraries shrink 5x anyway
done
cat >"$out/run.sh" <<EOF
#!/usr/bin/env bash
# Made by scripts/stage-gpu-build.sh: runs scripts/run-gpu-checks.sh over the staged build.
set -uo pipefail
here=\$(cd "\$(dirname "\$0")" && pwd)
cd "\$here/.."
if [ ! -e "$build" ]; then mkdir -p "$(dirname "$build")" && ln -s "\$here/build" "$build"; fi
[ "\$(cd "$build" && pwd -P)" = "\$(cd "\$here/build" && pwd -P)" ] || { echo "$build is taken on this machine"; exit 1; }
mkdir -p /tmp/fp8attn-staged-lib
for f in "\$here"/lib/*.xz; do
  [ -e "\$f" ] && python3 -c "import lzma,sys;sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" "\$f" \\
    >/tmp/fp8attn-staged-lib/\$(basename "\$f" .xz)
done
export LD_LIBRARY_PATH=/tmp/fp8attn-staged-lib:/usr/local/cuda/lib64\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PATH=\$PATH:/usr/local/cuda/bin
FP8ATTN_GPU_PREBUILT="$build" bash scripts/run-gpu-checks.sh
EOF
chmod +x "$out/run.sh"
echo "staged $(find "$out" -type f | wc -l) files, $(du -sh "$out" | cut -f1), into $out; run there: bash $out/run.sh"
