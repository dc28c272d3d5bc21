#!/usr/bin/env python3
"""Every mutant of tests/mutation/mutants.tsv still applies: its file exists, its old string
occurs exactly once there, and its new string differs. scripts/mutate.sh would report such a
mutant as invalid only when someone runs the list (not in CI); this check runs in CI, so a
change that moves a mutated line shows at once. Usage: check_mutants.py REPO_ROOT"""
import pathlib
import sys


def unescape(s: str) -> str:
    return s.replace("\\t", "\t").replace("\\n", "\n")


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    bad, ids, count = [], set(), 0
    for number, line in enumerate((root / "tests/mutation/mutants.tsv").read_text(encoding="utf-8").splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 4:
            bad.append(f"line {number}: {len(fields)} tab-separated fields, not 4")
            continue
        mutant, file, old, new = fields
        count += 1
        if mutant in ids:
            bad.append(f"{mutant}: the id is listed twice")
        ids.add(mutant)
        path = root / file
        if not path.is_file():
            bad.append(f"{mutant}: no file {file}")
            continue
        occurrences = path.read_text(encoding="utf-8").count(unescape(old))
        if occurrences != 1:
            bad.append(f"{mutant}: the old string occurs {occurrences} times in {file}")
        if unescape(old) == unescape(new):
            bad.append(f"{mutant}: the new string equals the old one")
    for b in bad:
        print(b)
    print(f"{count} mutants, {len(bad)} that would not apply")
    return 1 if bad or count == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
