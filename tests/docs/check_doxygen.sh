#!/usr/bin/env bash
# Runs doxygen with the repository's Doxyfile and fails on any warning. The output and the
# warning log go to <out_dir>, never into the source tree.
# Usage: check_doxygen.sh <source_dir> <out_dir> [doxygen]
# Exit status 77 (ctest SKIP_RETURN_CODE) when doxygen is not installed.
set -euo pipefail
src=$1 out=$2 doxygen=${3:-}
if [[ -z "$doxygen" || ! -x "$doxygen" ]]; then
  doxygen=$(command -v doxygen || true)
fi
if [[ -z "$doxygen" ]]; then
  echo "SKIP: doxygen is not installed (scripts/install-deps.sh installs the Debian package 'doxygen')"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
log="$out/warnings.log"
# Later settings override earlier ones, so the Doxyfile is used as is with only the output
# locations replaced.
{
  cat "$src/Doxyfile"
  echo "OUTPUT_DIRECTORY = $out"
  echo "WARN_LOGFILE = $log"
} | (cd "$src" && "$doxygen" - >"$out/doxygen.stdout" 2>"$out/doxygen.stderr") || {
  echo "FAIL: doxygen exited with status $?"
  cat "$out/doxygen.stderr"
  exit 1
}
[[ -f "$out/html/index.html" ]] || { echo "FAIL: doxygen produced no html/index.html"; exit 1; }
documented=$(grep -c 'fp8attn_' "$out/html/fp8attn_8h.html" || true)
warnings=$(cat "$log" "$out/doxygen.stderr" | grep -c 'warning' || true)
echo "doxygen $("$doxygen" --version): $warnings warning(s); fp8attn_8h.html mentions fp8attn_ $documented times"
if ((warnings > 0)); then
  cat "$log" "$out/doxygen.stderr"
  exit 1
fi
((documented > 0)) || { echo "FAIL: the public header's page is missing or empty"; exit 1; }
# The rendered structure: thread-safety headings, a description per return code, a main page.
python3 "$src/tests/docs/check_rendered_api.py" "$out/html" "$src/include/fp8attn/fp8attn.h"
# The rendered page as a reader sees it: Chromium draws the forward call's documentation to a PNG
# and OCR checks that the thread-safety note sits under its own heading.
python3 "$src/tests/docs/check_rendered_page.py" "$out/html" "$out/rendered"
