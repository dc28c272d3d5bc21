"""The ctypes structs against the C compiler's layout: every size and field offset printed by
bindings/layout_probe (compiled against the installed header), and no struct or field left out."""
import ctypes
import os
import subprocess

from fp8attn import _abi


def test_struct_layouts_match_the_c_probe():
    probe = os.environ.get("FP8ATTN_LAYOUT_PROBE")
    assert probe, "set FP8ATTN_LAYOUT_PROBE to the compiled bindings/layout_probe/fp8attn_layout_probe.c"
    lines = subprocess.run([probe], check=True, capture_output=True, text=True).stdout.split("\n")
    seen = set()
    for line in filter(None, lines):
        struct, field, value = line.split()
        mirror = _abi.STRUCTS[struct]
        got = ctypes.sizeof(mirror) if field == "sizeof" else getattr(mirror, field).offset
        assert got == int(value), f"{struct}.{field}: ctypes {got}, C {value}"
        seen.add((struct, field))
    mirrored = {(s, f[0]) for s, m in _abi.STRUCTS.items() for f in m._fields_} | \
               {(s, "sizeof") for s in _abi.STRUCTS}
    assert mirrored == seen, f"not in the probe: {mirrored - seen}; not mirrored: {seen - mirrored}"
    print(f"{len(seen)} sizes and offsets of {len(_abi.STRUCTS)} structs match the C compiler's")


def test_every_header_function_has_a_prototype():
    header = os.environ.get("FP8ATTN_HEADER")
    assert header, "set FP8ATTN_HEADER to the installed fp8attn/fp8attn.h"
    import re

    declared = set(re.findall(r"^FP8ATTN_API[^(]*?\b(fp8attn_\w+)\(", open(header).read(), re.M))
    assert declared and declared == set(_abi.PROTOTYPES), declared ^ set(_abi.PROTOTYPES)


def test_the_library_loaded_is_the_one_named():
    import fp8attn

    want = os.environ.get("FP8ATTN_LIBRARY")
    path = fp8attn.library_path()
    print(f"library: {path}, version {fp8attn.version()}")
    if want:
        assert path == want
    else:
        assert path.endswith("fp8attn/libfp8attn.so")  # the wheel's own copy
    assert fp8attn.version()[0] == 0
