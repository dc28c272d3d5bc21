"""Every citation of the design document in the code, the header, the tests and the docs points
at something that exists: "DESIGN §N", "DESIGN.md §N" and "docs/design.md §N" name a section of
docs/design.md (the file says the three forms mean it), and a quoted title right after the
section number ("DESIGN §3, "Stabilized safe softmax"") is a heading or a phrase of that section.
Usage: check_design_citations.py <source dir>"""
import os
import re
import sys

src = sys.argv[1]
design = open(os.path.join(src, "docs/design.md"), encoding="utf-8").read()
sections = {}  # "3" -> text of section 3, subsections included
for m in re.finditer(r"^## (\d+)\. .*?(?=^## \d+\. |\Z)", design, re.M | re.S):
    sections[m.group(1)] = m.group(0).lower()

cite = re.compile(r"(?:docs/design\.md|DESIGN(?:\.md)?) §(\d+)(?:\.\d+)*(?:'s)?[,;:]?\s*(?:\(?\"([^\"]+)\")?")
skip_dirs = {".git", ".venv", "node_modules", "compat", "target"}
exts = (".h", ".hpp", ".cpp", ".cu", ".inc", ".py", ".rs", ".go", ".md", ".sh", ".txt")
failures, count = [], 0
for root, dirs, files in os.walk(src):
    dirs[:] = [d for d in dirs if d not in skip_dirs and not d.startswith("build")]
    for name in files:
        path = os.path.join(root, name)
        if not name.endswith(exts) or os.path.samefile(path, os.path.join(src, "docs/design.md")):
            continue
        text = open(path, encoding="utf-8", errors="replace").read()
        for m in cite.finditer(text):
            count += 1
            where = f"{os.path.relpath(path, src)}:{text.count(chr(10), 0, m.start()) + 1}"
            section, title = m.group(1), m.group(2)
            if title:  # a title wrapped across comment lines: drop the line break and the comment marker
                title = re.sub(r"\s*\n\s*(?://+|#+|\*+)?\s*", " ", title)
            if section not in sections:
                failures.append(f"{where}: cites §{section}, which docs/design.md does not have")
            elif title and title.lower().rstrip(".") not in sections[section]:
                failures.append(f'{where}: cites §{section} "{title}", not found in that section')
print(f"{count} citations of docs/design.md checked against sections {sorted(sections)}")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
