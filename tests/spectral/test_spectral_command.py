"""`fp8attn spectral` on a small Llama-layout safetensors file written here: BF16 weights, GQA
head counts from config.json, the tool's own header parser. σ must match numpy's SVD of the
formed products of the BF16-rounded weights, and a corrupt header must be refused."""
import json
import os
import struct
import subprocess

import ml_dtypes
import numpy as np
import pytest

SEED = 99
LAYERS, HEADS_Q, HEADS_KV, HEAD_DIM, D_MODEL = 2, 4, 2, 16, 64


def tool():
    path = os.environ.get("FP8ATTN_TOOL")
    if not path:
        pytest.skip("the command-line tool is not built (FP8ATTN_BUILD_TOOLS=OFF): FP8ATTN_TOOL is empty")
    return path


def write_safetensors(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (dtype, array) in tensors.items():
        data = array.tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    encoded = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for blob in blobs:
            f.write(blob)


def make_model(directory):
    rng = np.random.default_rng(SEED)
    tensors, weights = {}, []
    for layer in range(LAYERS):
        wq = rng.standard_normal((HEADS_Q * HEAD_DIM, D_MODEL)).astype(ml_dtypes.bfloat16)
        wk = rng.standard_normal((HEADS_KV * HEAD_DIM, D_MODEL)).astype(ml_dtypes.bfloat16)
        tensors[f"model.layers.{layer}.self_attn.q_proj.weight"] = ("BF16", wq)
        tensors[f"model.layers.{layer}.self_attn.k_proj.weight"] = ("BF16", wk)
        weights.append((wq.astype(np.float64), wk.astype(np.float64)))
    write_safetensors(directory / "model.safetensors", tensors)
    (directory / "config.json").write_text(json.dumps({
        "num_attention_heads": HEADS_Q, "num_key_value_heads": HEADS_KV, "hidden_size": D_MODEL}))
    return weights


def test_llama_layout_bf16_gqa(tmp_path):
    print(f"seed {SEED}")
    weights = make_model(tmp_path)
    out = subprocess.run([tool(), "spectral", str(tmp_path / "model.safetensors"), "--csv"], check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()
    rows = [line.split(",") for line in out[1:]]
    assert len(rows) == LAYERS * HEADS_Q
    worst = 0.0
    group = HEADS_Q // HEADS_KV
    for layer, (wq, wk) in enumerate(weights):
        for h in range(HEADS_Q):
            g = h // group
            m = wq[h * HEAD_DIM:(h + 1) * HEAD_DIM].T @ wk[g * HEAD_DIM:(g + 1) * HEAD_DIM]
            reference = np.linalg.svd(m, compute_uv=False)[0]
            row = rows[layer * HEADS_Q + h]
            worst = max(worst, abs(float(row[2]) - reference) / reference)
    print(f"{len(rows)} heads from the BF16 Llama-layout file; worst relative error vs SVD {worst:.2e}")
    assert worst <= 1e-4


def test_corrupt_header_is_refused(tmp_path):
    make_model(tmp_path)
    path = tmp_path / "model.safetensors"
    data = bytearray(path.read_bytes())
    data[0:8] = struct.pack("<Q", len(data))  # header length past the end of the file
    path.write_bytes(bytes(data))
    result = subprocess.run([tool(), "spectral", str(path)], capture_output=True, text=True)
    print(result.stderr.splitlines()[0])
    assert result.returncode != 0
    assert "runs past the file" in result.stderr
