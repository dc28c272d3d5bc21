#!/usr/bin/env bash
# The CUDA compiler launcher of the sm_90a attention kernels (kernels/sm90/CMakeLists.txt): runs the
# nvcc command it is given with ptxas' statistics on (-Xptxas=-v), and keeps them with a copy of
# the object in LOG_DIR as SOURCE.ptxas.log and SOURCE.o (SOURCE: the .cu file's name).
# Usage: nvcc_ptxas_log.sh LOG_DIR COMPILER [ARGS...]
#
# NOTE: why: the static checks (tools/check_attention_sm90a.sh, tools/check_attention_bwd_sm90a.sh)
# need the per-kernel ptxas lines and the SASS. They compiled the same translation units a second
# time for that, and the forward's alone takes about 4.5 minutes of one core, in a CI of 2 cores.
# With this launcher they read the library's own compile, the code that ships.
# The terminal still sees everything the compiler prints except ptxas -v's statistics, so
# warnings (-warn-spills, -warn-lmem-usage) show in the build as before.
set -uo pipefail
log_dir=$1
shift

object=""
source=""
previous=""
for arg in "$@"; do
  [ "$previous" = "-o" ] && object=$arg
  case $arg in *.cu) source=$arg ;; esac
  previous=$arg
done

# Not a compile of one .cu into an object (a dependency scan, say): run it unchanged.
if [ -z "$source" ] || [ -z "$object" ]; then
  exec "$@"
fi

mkdir -p "$log_dir"
name=$(basename "$source")
log="$log_dir/$name.ptxas.log"
rm -f "$log" "$log_dir/$name.o"
"$@" -Xptxas=-v >"$log.part" 2>&1
status=$?
grep -vE "^ptxas info|^ +[0-9]+ bytes stack frame" "$log.part" >&2
if [ "$status" -eq 0 ] && [ -f "$object" ]; then
  mv "$log.part" "$log"
  cp "$object" "$log_dir/$name.o"
else
  rm -f "$log.part"
fi
exit "$status"
