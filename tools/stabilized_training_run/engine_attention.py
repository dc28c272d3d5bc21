"""One causal attention head of the training run through fp8attn's CPU engine: BF16 q, k, v into
the forward (BF16 out, F32 LSE), then the gradients either from the engine's backward
(Plan.backward on BF16 q, k, v, out, dout and the F32 LSE; dq, dk, dv come back in BF16) or, as
the first version of this run did, from the FP64 backward of attention_math.py fed the engine's
O and LSE.

Beside the gradients it keeps, for W_Q's gradient error, two FP64 references on the same BF16
q, k, v and the same dO (rounded to BF16 when the engine's backward gets BF16):
- dq_exact: the exact forward and the exact backward;
- dq_forward_only: the exact backward from the engine's O and LSE, so that dq_forward_only −
  dq_exact is the forward's share of the error and dq − dq_forward_only the backward's.
Arrays are [batch, seq, dim] float64."""
import ml_dtypes
import numpy as np

from attention_math import backward, forward

BF16 = ml_dtypes.bfloat16


class EngineHead:
    def __init__(self, plan, engine_backward):
        self.plan = plan
        self.engine_backward = engine_backward

    def forward(self, q, k, v):
        """The engine's O (float64 of the BF16 output) for float64 q, k, v (rounded to BF16 here)."""
        self.qb, self.kb, self.vb = (a.astype(BF16)[:, :, None, :] for a in (q, k, v))
        self.out, self.lse = self.plan.forward(self.qb, self.kb, self.vb, return_lse=True)
        self.o = np.asarray(self.out, dtype=np.float64)[:, :, 0, :]
        return self.o

    def inputs(self):
        """q, k, v as float64 exactly as the engine saw them (BF16 values)."""
        return tuple(np.asarray(a, dtype=np.float64)[:, :, 0, :] for a in (self.qb, self.kb, self.vb))

    def backward(self, d_o):
        """(dq, dk, dv) for dO = d_o, and the FP64 references (dq_exact, dq_forward_only)."""
        qf, kf, vf = self.inputs()
        lse = np.asarray(self.lse, dtype=np.float64)[:, 0, :]
        if self.engine_backward:
            dob = d_o.astype(BF16)[:, :, None, :]
            grads = self.plan.backward(self.qb, self.kb, self.vb, self.out, dob, self.lse)
            dq, dk, dv = (np.asarray(g, dtype=np.float64)[:, :, 0, :] for g in grads)
            d_o = np.asarray(dob, dtype=np.float64)[:, :, 0, :]  # the references see the same dO
            dq_forward_only = backward(qf, kf, vf, self.o, lse, d_o)[0]
        else:
            dq, dk, dv = backward(qf, kf, vf, self.o, lse, d_o)
            dq_forward_only = dq
        o_exact, lse_exact = forward(qf, kf, vf)
        dq_exact = backward(qf, kf, vf, o_exact, lse_exact, d_o)[0]
        return (dq, dk, dv), dq_exact, dq_forward_only


class ErrorAccumulator:
    """Δ = Σ_t δ_t of a gradient error: ‖Δ‖_F / sqrt(Σ‖δ_t‖²_F) is about 1 for errors of random
    direction and grows like √t for errors that keep one direction; ‖Δ‖₂ / ‖Δ‖_F is 1 when Δ is
    rank one. fix_direction() freezes Δ's top singular pair (u, v) as a fixed rank-one direction;
    alignment() = |uᵀ·Δ·v| / ‖Δ‖_F then stays put when later errors keep that direction and decays
    like sqrt(t_fix / t) when they are random."""

    def __init__(self, shape):
        self.acc = np.zeros(shape)
        self.sum_sq = 0.0
        self.u = self.v = None

    def fix_direction(self):
        u, _, vt = np.linalg.svd(self.acc)
        self.u, self.v = u[:, 0], vt[0]

    def alignment(self):
        if self.u is None:
            return float("nan")
        return float(abs(self.u @ self.acc @ self.v) / max(np.linalg.norm(self.acc), 1e-300))

    def add(self, delta):
        self.acc += delta
        self.sum_sq += float((delta ** 2).sum())

    def growth(self):
        return float(np.linalg.norm(self.acc) / max(np.sqrt(self.sum_sq), 1e-300))

    def rank1(self):
        return float(np.linalg.norm(self.acc, 2) / max(np.linalg.norm(self.acc), 1e-300))
