"""Counts of a junit file of FlashAttention-3's test file run through the adapter: per test function,
passed / failed / skipped because fp8attn lacks the feature / not applicable / skipped by the test
itself, then the skip reasons and the failures. Usage: python summarize.py junit.xml [more.xml ...]"""
import collections
import sys
import xml.etree.ElementTree as ET

KINDS = ("passed", "failed", "lacks", "n/a", "test-skip")


def main(paths: list) -> None:
    counts: dict = collections.defaultdict(collections.Counter)
    reasons: collections.Counter = collections.Counter()
    failures: list = []
    cases = [c for path in paths for c in ET.parse(path).getroot().iter("testcase")]
    for case in cases:
        name = case.get("name", "")
        func = name.split("[", 1)[0]
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        skip = case.find("skipped")
        if bad is not None:
            counts[func]["failed"] += 1
            failures.append((name, (bad.get("message") or "").splitlines()[0][:300] if bad.get("message") else ""))
        elif skip is not None:
            msg = skip.get("message") or ""
            if "fp8attn lacks: " in msg:
                counts[func]["lacks"] += 1
                reasons[msg[msg.index("fp8attn lacks: "):]] += 1
            elif "not applicable: " in msg:
                counts[func]["n/a"] += 1
            else:
                counts[func]["test-skip"] += 1
        else:
            counts[func]["passed"] += 1
    total = collections.Counter()
    print(f"{'test function':40s} " + " ".join(f"{k:>9s}" for k in KINDS))
    for func in sorted(counts):
        total.update(counts[func])
        print(f"{func:40s} " + " ".join(f"{counts[func][k]:9d}" for k in KINDS))
    print(f"{'total':40s} " + " ".join(f"{total[k]:9d}" for k in KINDS))
    print("\nskipped because fp8attn lacks the feature:")
    for reason, n in reasons.most_common():
        print(f"  {n:6d}  {reason}")
    print(f"\nfailures ({len(failures)}):")
    for name, msg in failures:
        print(f"  {name}: {msg}")


if __name__ == "__main__":
    main(sys.argv[1:])
