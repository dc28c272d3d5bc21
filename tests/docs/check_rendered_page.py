"""Looks at the rendered API page as a reader does: headless Chromium renders the documentation of
fp8attn_attention_forward() (doxygen's HTML with its own stylesheet) to a PNG, and Tesseract reads
the words back with their positions. The thread-safety note must sit under its own "Thread safety"
heading: the heading at the same indentation as "Parameters" and "Return values", below the
last return code, with the note's text on the next line, indented like a description. (The old
failure: the note rendered as the description of the last return code, with no heading.)
Usage: check_rendered_page.py <doxygen html dir> <scratch dir>; writes <scratch>/forward.png."""
import csv
import os
import shutil
import subprocess
import sys

html_dir, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
tesseract = shutil.which("tesseract")
if not chromium or not tesseract:
    sys.exit("FAIL: needs Debian's chromium and tesseract-ocr (scripts/install-deps.sh installs both)")

page = open(f"{html_dir}/fp8attn_8h.html", encoding="utf-8").read()
title = page.index("fp8attn_attention_forward()</h2>")
start = page.rindex('<h2 class="memtitle">', 0, title)
end = page.index('<h2 class="memtitle">', title)
css = os.path.abspath(f"{html_dir}/doxygen.css")
with open(f"{out}/forward.html", "w", encoding="utf-8") as f:
    f.write(f'<!DOCTYPE html><html><head><meta charset="utf-8"><link href="file://{css}" rel="stylesheet">'
            f'</head><body style="width:900px;margin:20px"><div class="contents">{page[start:end]}</div>'
            f"</body></html>")
png = f"{out}/forward.png"
subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                f"--user-data-dir={out}/chromium-profile", f"--screenshot={png}", "--window-size=960,2400",
                f"file://{os.path.abspath(out)}/forward.html"], check=True, capture_output=True, timeout=120)
subprocess.run([tesseract, png, f"{out}/forward", "--psm", "4", "tsv"], check=True, capture_output=True, timeout=120)

words = []  # (text, left, top, line key)
with open(f"{out}/forward.tsv", encoding="utf-8") as f:
    for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
        if row["level"] == "5" and row["text"].strip():
            words.append((row["text"].strip(), int(row["left"]), int(row["top"]),
                          (row["block_num"], row["par_num"], row["line_num"])))


def first(text):
    hits = [w for w in words if w[0] == text]
    return hits[0] if hits else None


failures = []
params, returns = first("Parameters"), first("Return")
heading = next((w for i, w in enumerate(words[:-1])
                if w[0] == "Thread" and words[i + 1][0] == "safety" and words[i + 1][3] == w[3]), None)
codes = [w for w in words if "FP8ATTN_STATUS" in w[0]]
if not (params and returns and codes):
    failures.append("the page shows no Parameters / Return values sections (did it render?)")
elif heading is None:
    failures.append('no "Thread safety" heading on the rendered page')
else:
    if abs(heading[1] - params[1]) > 6 or abs(heading[1] - returns[1]) > 6:
        failures.append(f'"Thread safety" at x={heading[1]}, headings at x={params[1]}/{returns[1]}: not a heading')
    if heading[2] <= max(c[2] for c in codes):
        failures.append('"Thread safety" is not below the last return code')
    note = [w for w in words if w[2] > heading[2] + 5 and ("hread-safe" in w[0] or w[0] == "Not")]
    if not note:
        failures.append('no thread-safety note under the "Thread safety" heading')
    elif note[0][1] <= heading[1] + 5:
        failures.append("the thread-safety note is not indented under its heading")
print(f"rendered {png}: {len(words)} words; heading {heading[:3] if heading else None}; "
      f"Parameters {params[:3] if params else None}")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
