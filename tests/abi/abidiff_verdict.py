"""Reads `abidiff --leaf-changes-only` output on stdin and decides whether the change is
compatible under fp8attn's rules (DESIGN §2): nothing removed, no function changed directly, and
every changed type a struct that only grew by members inserted at or after its old end, with no
existing member moved or retyped. Exit 0 compatible, 1 incompatible (with the reasons)."""
import re
import sys

report = sys.stdin.read()
reasons = []
for what in ("functions", "variables"):
    m = re.search(rf"Removed/Changed/Added {what} summary: (\d+) Removed, (\d+) Changed", report)
    if m and (int(m.group(1)) or int(m.group(2))):
        reasons.append(f"{what}: {m.group(1)} removed, {m.group(2)} changed")
if re.search(r"Removed (function|variable) symbol|symbols? not referenced by debug info", report) and \
        re.search(r"[1-9]\d* Removed", report):
    reasons.append("symbols removed")

# Type blocks: "'struct X' changed:" followed by indented lines.
for name, body in re.findall(r"^'([^']+)' changed:\n((?:  .*\n?)*)", report, re.M):
    old_size = None
    for line in body.splitlines():
        line = line.strip()
        size = re.match(r"type size changed from (\d+) to (\d+) \(in bits\)", line)
        if size:
            old_size, new_size = int(size.group(1)), int(size.group(2))
            if new_size < old_size:
                reasons.append(f"{name} shrank")
            continue
        inserted = re.match(r"'.*', at offset (\d+) \(in bits\)", line)
        if inserted:
            if old_size is None or int(inserted.group(1)) < old_size:
                reasons.append(f"{name}: a member inserted before the old end: {line}")
            continue
        if re.match(r"\d+ data member insertions?:|(one|\d+) impacted interfaces?:?|function |\d+ enumerator insertions?:|"
                    r"'\w+' value '\d+'", line):
            continue
        if not name.startswith("struct ") or line:
            reasons.append(f"{name}: {line}")
if reasons:
    print("ABI: incompatible change:\n  " + "\n  ".join(reasons))
    sys.exit(1)
print("ABI: compatible with the baseline")
