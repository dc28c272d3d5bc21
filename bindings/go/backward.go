package fp8attn

/*
#include "fp8attn/fp8attn.h"
*/
import "C"

import "runtime"

// BackwardArgs are one backward call's tensors. The plan is the forward's, with BF16 inputs: its
// causal mask, window, GQA and softmax scale apply. Layouts are the forward's (padded [batch,
// seqlen, heads, dim], or packed [total, heads, dim] with CuSeqlensQ/K, Batch and MaxSeqlenQ/K);
// each gradient has its tensor's shape. Out and DOut have the plan's output dtype, LSE is the
// forward's F32 log-sum-exp; DQ is BF16 or F32, DK and DV BF16. With GQA, DK and DV of a KV head
// sum over its query heads.
//
// Deterministic asks for the same bits whatever the thread count or schedule; false (the zero
// value, as in the C struct) lets a GPU backend accumulate dq with atomics. The CPU backend is
// deterministic either way.
type BackwardArgs struct {
	Q, K, V, Out, DOut, LSE Tensor
	DQ, DK, DV              Tensor
	CuSeqlensQ, CuSeqlensK  Tensor // packed layout
	Batch                   int64  // needed with the packed layout
	MaxSeqlenQ, MaxSeqlenK  int64  // needed with the packed layout
	Deterministic           bool
}

// BackwardWorkspaceSize is the workspace in bytes of a backward call for problems up to these sizes.
func (p *Plan) BackwardWorkspaceSize(batch, maxSeqlenQ, maxSeqlenK int64) (int, error) {
	var bytes C.size_t
	err := call("fp8attn_plan_backward_workspace_size", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_plan_backward_workspace_size(p.raw, C.int64_t(batch), C.int64_t(maxSeqlenQ),
			C.int64_t(maxSeqlenK), &bytes, e)
	})
	return int(bytes), err
}

// Backward computes DQ, DK and DV with a host workspace from fp8attn_host_alloc. The gradients are
// written only on success (with FP8ATTN_STATUS_NUMERICS they hold unspecified values).
func (p *Plan) Backward(a *BackwardArgs) error {
	var args C.fp8attn_attention_bwd_args
	args.struct_size = C.size_t(C.sizeof_fp8attn_attention_bwd_args)
	fields := []struct {
		dst *C.fp8attn_tensor
		src Tensor
	}{{&args.q, a.Q}, {&args.k, a.K}, {&args.v, a.V}, {&args.out, a.Out}, {&args.dout, a.DOut},
		{&args.lse, a.LSE}, {&args.dq, a.DQ}, {&args.dk, a.DK}, {&args.dv, a.DV},
		{&args.cu_seqlens_q, a.CuSeqlensQ}, {&args.cu_seqlens_k, a.CuSeqlensK}}
	for i, f := range fields {
		if i < 9 && f.src == nil {
			return bindingError(StatusInvalidArgument, "q, k, v, out, dout, lse, dq, dk and dv are required")
		}
		t, err := optional(f.src)
		if err != nil {
			return err
		}
		*f.dst = t
	}
	if a.Deterministic {
		args.deterministic = 1
	}
	batch, sq, sk, err := problemSizes(&args.q, &args.k, a.CuSeqlensQ != nil, a.Batch, a.MaxSeqlenQ, a.MaxSeqlenK)
	if err != nil {
		return err
	}
	bytes, err := p.BackwardWorkspaceSize(batch, sq, sk)
	if err != nil {
		return err
	}
	ws, err := hostWorkspace(C.size_t(bytes))
	if err != nil {
		return err
	}
	defer C.fp8attn_host_free(ws)
	err = call("fp8attn_attention_backward", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_attention_backward(p.raw, &args, ws, C.size_t(bytes), nil, e)
	})
	runtime.KeepAlive(a) // the HostTensors' finalizers must not run during the call
	return err
}
