"""Shared fixtures: the seed, a CPU context, and poisoned outputs."""
import os

import ml_dtypes
import numpy as np
import pytest

import fp8attn

SEED = int(os.environ.get("FP8ATTN_TEST_SEED", "20261123"))


@pytest.fixture(scope="session")
def ctx():
    with fp8attn.Context("cpu", num_threads=2, log_level="off") as c:
        yield c


@pytest.fixture
def rng(request):
    seed = SEED + sum(map(ord, request.node.name))
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def poisoned(shape, dtype):
    """An output array filled with NaN bit patterns: any element a call does not write stays NaN."""
    dtype = np.dtype(dtype)
    fill = {1: 0x7F, 2: 0x7FC1, 4: 0x7FC0DEAD}[dtype.itemsize]
    return np.full(shape, fill, dtype={1: np.uint8, 2: np.uint16, 4: np.uint32}[dtype.itemsize]).view(dtype)


def e4m3(x, scale):
    """x·scale rounded to E4M3 with saturation (ml_dtypes does not saturate)."""
    return np.clip(x * scale, -448, 448).astype(ml_dtypes.float8_e4m3fn)
