"""Errors: bad input raises the status's Error subclass with the name, code and message the same
call wrote; outputs stay untouched; the log callback never lets an exception into C."""
import ml_dtypes
import numpy as np
import pytest

import fp8attn
from conftest import poisoned


def _e4m3(rng, *shape):
    return rng.uniform(-2, 2, shape).astype(ml_dtypes.float8_e4m3fn)


def test_unsupported_head_dim(ctx):
    with pytest.raises(fp8attn.UnsupportedError) as info:
        ctx.plan(head_dim=96)
    e = info.value
    print(e)
    assert (e.status, e.code, e.name) == (2001, 2001, "FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM")
    assert "head_dim" in e.message and isinstance(e, fp8attn.Error) and isinstance(e, NotImplementedError)


def test_bad_heads_and_shape_leave_outputs_untouched(rng, ctx):
    with pytest.raises(fp8attn.InvalidArgumentError) as info:
        ctx.plan(head_dim=64, num_heads_q=3, num_heads_kv=2)
    assert info.value.name == "FP8ATTN_STATUS_BAD_HEADS" and info.value.status == 1009
    q, k, v = _e4m3(rng, 1, 16, 2, 64), _e4m3(rng, 1, 20, 2, 64), _e4m3(rng, 1, 21, 2, 64)  # v's seqlen is wrong
    out = poisoned((1, 16, 2, 64), np.float32)
    with ctx.plan(head_dim=64, num_heads_q=2, num_heads_kv=2, output_dtype="float32") as plan:
        with pytest.raises(fp8attn.InvalidArgumentError) as info:
            plan.forward(q, k, v, out=out)
    print(info.value)
    assert info.value.name == "FP8ATTN_STATUS_BAD_SHAPE" and info.value.message
    assert np.all(np.isnan(out)), "a failed call wrote its output"


def test_nan_descale_is_bad_scale(rng):
    q, k, v = _e4m3(rng, 1, 8, 1, 64), _e4m3(rng, 1, 8, 1, 64), _e4m3(rng, 1, 8, 1, 64)
    with pytest.raises(fp8attn.InvalidArgumentError) as info:
        fp8attn.attention(q, k, v, descales=(float("nan"), None, None))
    assert info.value.status == 1007 and info.value.name == "FP8ATTN_STATUS_BAD_SCALE"


def test_wrong_dtype_is_refused(rng):
    x = rng.standard_normal((1, 8, 1, 64)).astype(np.float32)
    with pytest.raises(fp8attn.InvalidArgumentError) as info:
        fp8attn.attention(x, x, x)
    assert info.value.name == "FP8ATTN_STATUS_BAD_DTYPE"
    with pytest.raises(fp8attn.InvalidArgumentError) as info:
        fp8attn.attention(x.astype(np.int64), x, x)
    assert info.value.name == "FP8ATTN_STATUS_BAD_DTYPE"


def test_cuda_backend_without_a_gpu_is_a_device_error(monkeypatch):
    monkeypatch.setenv("FP8ATTN_CUDA_BACKEND", "/nonexistent/libfp8attn_cuda.so")
    with pytest.raises(fp8attn.DeviceError) as info:
        fp8attn.Context("cuda")
    print(info.value)
    assert info.value.status // 1000 == 4


def test_unknown_enum_names_raise_value_error(ctx):
    with pytest.raises(ValueError):
        fp8attn.Context("tpu")
    with pytest.raises(ValueError):
        ctx.plan(head_dim=64, kv_order="sideways")


def test_log_callback_receives_messages_and_contains_exceptions():
    got = []

    def log(level, message):
        got.append((level, message))
        raise RuntimeError("a callback that fails")

    with fp8attn.Context("auto", log_level="trace", log_callback=log) as c:
        assert c.backend in ("cpu", "cuda")
        with pytest.raises(fp8attn.UnsupportedError):
            c.plan(head_dim=100)
    print(got[:3])
    assert got and all(isinstance(lv, str) and isinstance(m, str) for lv, m in got)
    assert c.log_errors and isinstance(c.log_errors[0], RuntimeError)


def test_set_log_level_changes_what_the_callback_receives():
    got = []
    with fp8attn.Context("cpu", num_threads=1, log_level="error", log_callback=lambda lv, m: got.append(lv)) as c:
        with c.plan(head_dim=64):
            pass
        assert "debug" not in got
        c.set_log_level("debug")
        with c.plan(head_dim=64):
            pass
        assert "debug" in got, got
        with pytest.raises(ValueError):
            c.set_log_level("loud")
