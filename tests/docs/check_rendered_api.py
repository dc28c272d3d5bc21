"""Checks the rendered API page (doxygen HTML of fp8attn.h) for the structure a reader needs:
- every function that states its thread-safety does so under its own "Thread safety" heading,
  never inside the description of its last return code;
- every return code in a @retval table has a description (one code per line);
- the main page has an overview with the call sequence.
Usage: check_rendered_api.py <html dir> <fp8attn.h>"""
import re
import sys

html_dir, header = sys.argv[1], sys.argv[2]
page = open(f"{html_dir}/fp8attn_8h.html", encoding="utf-8").read()
index = open(f"{html_dir}/index.html", encoding="utf-8").read()
failures = []

stated = len(re.findall(r"^ \* (Thread-safe|Not thread-safe)", open(header, encoding="utf-8").read(), re.M))
headings = len(re.findall(r"<dt>Thread safety</dt>", page))
if headings < stated or stated == 0:
    failures.append(f"{stated} thread-safety notes in the header, {headings} 'Thread safety' headings rendered")
for table in re.findall(r'<table class="retval">(.*?)</table>', page, re.S):
    for code, text in re.findall(r'<td class="paramname">(.*?)</td><td>(.*?)</td>', table, re.S):
        plain = re.sub(r"<[^>]+>", "", text).strip()
        if not plain:
            failures.append(f"@retval {code.strip()} renders with no description")
        if re.search(r"[Tt]hread-safe", plain):
            failures.append(f"a thread-safety note renders as the description of {code.strip()}")
        if "," in re.sub(r"<[^>]+>", "", code):
            failures.append(f"one @retval line lists several codes: {code.strip()}")
if "Call sequence" not in index or "fp8attn_plan_create" not in index:
    failures.append("the main page has no call-sequence overview")

print(f"{headings} 'Thread safety' headings for {stated} notes; main page {len(index)} bytes")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
