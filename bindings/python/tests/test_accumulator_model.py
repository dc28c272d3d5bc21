"""The accumulator_model plan option by name: "tensor_core" (the default, Hopper's exact addition)
and "fp32" both stay within the FP64 bound of test_attention.py, differ from each other (the rule
cuts addends that FP32 keeps), and an unknown name or a width other than 13 is refused."""
import numpy as np
import pytest

import fp8attn
import reference as ref
from conftest import poisoned
from test_attention import _check, _quantized


def _run(ctx, model, q8, k8, v8, descales):
    with ctx.plan(head_dim=128, num_heads_q=2, num_heads_kv=2, output_dtype="float32", accumulator_model=model) as plan:
        out = poisoned(q8.shape, np.float32)
        plan.forward(q8, k8, v8, out=out, descales=descales)
        return out


def test_both_modes_meet_the_fp64_bound_and_differ(rng, ctx):
    q8, dq, qd = _quantized(rng, 1, 96, 2, 128)
    k8, dk, kd = _quantized(rng, 1, 300, 2, 128, spread=2.0)
    v8, dv, vd = _quantized(rng, 1, 300, 2, 128)
    out64, _ = ref.attention(qd, kd, vd)
    model, _ = ref.attention(qd, kd, vd, p_round="e4m3")
    outs = {m: _run(ctx, m, q8, k8, v8, (dq, dk, dv)) for m in ("tensor_core", "fp32")}
    for m, out in outs.items():
        _check(out, None, out64, model, f"accumulator_model {m}")
    differ = int(np.count_nonzero(outs["tensor_core"] != outs["fp32"]))
    print(f"tensor_core and fp32 differ in {differ} of {outs['fp32'].size} outputs")
    assert differ > 0


def test_unknown_names_and_widths_are_refused(ctx):
    with pytest.raises(ValueError, match="accumulator_model"):
        ctx.plan(head_dim=64, num_heads_q=1, num_heads_kv=1, accumulator_model="fp16")
    with pytest.raises(fp8attn.InvalidArgumentError) as info:
        ctx.plan(head_dim=64, num_heads_q=1, num_heads_kv=1, accumulator_mantissa_bits=10)
    assert info.value.name == "FP8ATTN_STATUS_BAD_OPTION" and "accumulator_mantissa_bits" in str(info.value)
