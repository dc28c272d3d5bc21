"""The training run's FP64 attention backward against central finite differences of
L = Σ dO∘O on a small causal case (fresh seed; relative L2 error < 1e-6)."""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from attention_math import backward, forward  # noqa: E402


def test_backward_matches_finite_differences():
    seed = np.random.SeedSequence().entropy
    rng = np.random.default_rng(seed)
    q, k, v, d_o = (rng.normal(size=(2, 7, 5)) for _ in range(4))
    o, lse = forward(q, k, v)
    grads = backward(q, k, v, o, lse, d_o)
    h = 1e-6
    for x, g in zip((q, k, v), grads):
        numeric = np.zeros_like(x)
        for i in np.ndindex(*x.shape):
            old = x[i]
            x[i] = old + h
            plus = (forward(q, k, v)[0] * d_o).sum()
            x[i] = old - h
            minus = (forward(q, k, v)[0] * d_o).sum()
            x[i] = old
            numeric[i] = (plus - minus) / (2 * h)
        assert np.linalg.norm(g - numeric) / np.linalg.norm(numeric) < 1e-6, f"seed {seed}"
