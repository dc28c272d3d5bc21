#!/usr/bin/env python3
"""The SASS of an attention forward consumer's main loop, per KV block.

Usage: tools/sass_mainloop_counts.py KERNEL.sass BLOCK_N
KERNEL.sass is one kernel's function body from `cuobjdump --dump-sass`. Prints one line:
  blocks_per_iteration gmma ex2 fmnmx ffma shfl total unconditional ldl_stl_kernel floor gmma_nk
(the counts per KV block, from the main loop's body; ldl_stl_kernel over the whole kernel).
`total` is every instruction of the body (NOP aside): an upper bound of one iteration's path.
`unconditional` leaves out what a forward branch inside the body can skip (if/else regions, such
as the code behind a kernel-parameter flag): a lower bound. The budgets are judged on `total`.
`gmma_nk` sums N·K of the block's GMMA shapes (64xNxK): a warpgroup's tensor-core work per block.

The main loop is the innermost backward branch whose body holds a GMMA and MUFU.EX2: the one
that runs once per KV block in the steady state (the first block and the last are peeled around
it). A consumer thread owns 64·BlockN/128 = BlockN/2 scores of a block, so the body's MUFU.EX2
count over BlockN/2 (rounded down; the rescale adds a few) is the blocks one iteration covers.

The floor is what a block cannot do without, per consumer thread: its wgmmas, and one MUFU.EX2,
one FMNMX (the row max) and one FFMA (scale and subtract the max) per score.
"""
import re
import sys

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
GMMA_SHAPE = re.compile(r"[QH]GMMA\.64x(\d+)x(\d+)")
BRANCH = re.compile(r"\bBRA\b(?:\s+\S+)?\s+0x([0-9a-f]+)")


def opcode(text):
    words = text.split()
    return words[1] if words[0].startswith("@") else words[0]


def main():
    path, block_n = sys.argv[1], int(sys.argv[2])
    code = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = INSTRUCTION.search(line)
            if m:
                code.append((int(m.group(1), 16), m.group(2)))
    index = {address: i for i, (address, _) in enumerate(code)}
    loops = []
    for i, (address, text) in enumerate(code):
        m = BRANCH.search(text)
        if m and int(m.group(1), 16) < address and int(m.group(1), 16) in index:
            first = index[int(m.group(1), 16)]
            body = [opcode(t) for _, t in code[first:i + 1]]
            if any("GMMA" in op for op in body) and "MUFU.EX2" in body:
                loops.append((first, i))
    ldl_stl = sum(opcode(t).startswith(("LDL", "STL")) for _, t in code)
    if not loops:
        print(f"0 0 0 0 0 0 0 0 {ldl_stl} 0 0")
        return
    first, last = min(loops, key=lambda loop: loop[1] - loop[0])
    body = [opcode(t) for _, t in code[first:last + 1]]
    # Instructions a forward branch inside the body jumps over (taken or not, some path skips them).
    skippable = [False] * len(body)
    for j in range(first, last):
        m = BRANCH.search(code[j][1])
        if m and int(m.group(1), 16) in index and j < index[int(m.group(1), 16)] <= last:
            for k in range(j + 1, index[int(m.group(1), 16)]):
                skippable[k - first] = True
    unconditional = sum(op != "NOP" and not skip for op, skip in zip(body, skippable))
    ex2 = sum(op == "MUFU.EX2" for op in body)
    blocks = max(1, ex2 // (block_n // 2))

    def per_block(predicate):
        return sum(predicate(op) for op in body) / blocks

    gmma = per_block(lambda op: op.startswith(("QGMMA", "HGMMA")))
    counts = [
        gmma,
        per_block(lambda op: op == "MUFU.EX2"),
        per_block(lambda op: op.startswith("FMNMX")),
        per_block(lambda op: op.startswith("FFMA")),
        per_block(lambda op: op.startswith("SHFL")),
        per_block(lambda op: op != "NOP"),
        unconditional / blocks,
    ]
    floor = gmma + 3 * (block_n // 2)
    nk = 0
    for _, t in code[first:last + 1]:
        m = GMMA_SHAPE.search(t)
        if m:
            nk += int(m.group(1)) * int(m.group(2))
    print(blocks, " ".join(f"{c:g}" for c in counts), ldl_stl, f"{floor:g}", f"{nk / blocks:g}")


if __name__ == "__main__":
    main()
