package fp8attn

/*
#include <stdlib.h>
#include "fp8attn/fp8attn.h"
*/
import "C"

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Desc is what a plan computes: fp8attn_attention_desc with the defaults of
// fp8attn_attention_desc_init (E4M3 in, BF16 out, reverse KV order, S_p = 256).
type Desc struct {
	raw C.fp8attn_attention_desc
}

// NewDesc returns the defaults for these heads.
func NewDesc(headDim, numHeadsQ, numHeadsKV int32) *Desc {
	d := &Desc{}
	C.fp8attn_attention_desc_init(&d.raw)
	d.raw.head_dim = C.int32_t(headDim)
	d.raw.num_heads_q = C.int32_t(numHeadsQ)
	d.raw.num_heads_kv = C.int32_t(numHeadsKV)
	return d
}

func (d *Desc) Causal(on bool) *Desc         { d.raw.causal = b2u(on); return d }
func (d *Desc) Telemetry(on bool) *Desc      { d.raw.telemetry = b2u(on); return d }
func (d *Desc) InputDType(t DType) *Desc     { d.raw.input_dtype = C.int32_t(t); return d }
func (d *Desc) OutputDType(t DType) *Desc    { d.raw.output_dtype = C.int32_t(t); return d }
func (d *Desc) KVOrderForward(on bool) *Desc { d.raw.kv_order = C.int32_t(b2u(on)); return d }
func (d *Desc) PScaleLog2(p int32) *Desc     { d.raw.p_scale_log2 = C.int32_t(p); return d }
func (d *Desc) SoftmaxScale(s float32) *Desc { d.raw.softmax_scale = C.float(s); return d }

// PageSize sets the tokens per page of a paged KV cache (ForwardArgs.Paged); 0 is not paged.
func (d *Desc) PageSize(tokens int32) *Desc { d.raw.page_size = C.int32_t(tokens); return d }

// KVDType sets K's and V's dtype when it is not Q's: E4M3 under BF16 Q.
func (d *Desc) KVDType(t DType) *Desc { d.raw.kv_dtype = C.int32_t(t); return d }

// Decode selects the decode path (at most 8 queries per sequence; the CPU and reference
// backends): GQA-packed tiles over KV splits merged by the combine rule.
func (d *Desc) Decode(on bool) *Desc { d.raw.decode = b2u(on); return d }

// NumSplits sets the decode path's KV splits per sequence, 1..256; 0 picks by a heuristic. A fixed
// count gives batch-invariant results; 1 gives the plain forward's bits.
func (d *Desc) NumSplits(n int32) *Desc { d.raw.num_splits = C.int32_t(n); return d }

func (d *Desc) Window(left, right int32) *Desc {
	d.raw.window_left, d.raw.window_right = C.int32_t(left), C.int32_t(right)
	return d
}

// AccumulatorModel is how the CPU and emulated backends add a tensor-core instruction's products
// (fp8attn_accumulator_model); the CUDA backend runs what the hardware does either way.
type AccumulatorModel uint32

const (
	// AccumulatorFP32 is plain FP32 chunk sums, for throughput on the CPU.
	AccumulatorFP32 AccumulatorModel = C.FP8ATTN_ACCUMULATOR_FP32
	// AccumulatorTensorCore is Hopper's exact addition (the default), for FP8 and BF16 inputs.
	AccumulatorTensorCore AccumulatorModel = C.FP8ATTN_ACCUMULATOR_TENSOR_CORE
)

// Accumulator sets the accumulation of the CPU and emulated backends.
func (d *Desc) Accumulator(m AccumulatorModel) *Desc {
	d.raw.accumulator_model = C.uint32_t(m)
	return d
}

func b2u(b bool) C.uint32_t {
	if b {
		return 1
	}
	return 0
}

// Plan is an immutable attention plan, safe for concurrent Forward calls.
type Plan struct {
	raw       C.fp8attn_plan
	ctx       *Context
	telemetry bool
}

// NewPlan validates a description and prepares a plan.
func NewPlan(ctx *Context, d *Desc) (*Plan, error) {
	p := &Plan{ctx: ctx, telemetry: d.raw.telemetry != 0}
	if err := call("fp8attn_plan_create", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_plan_create(ctx.raw, &d.raw, &p.raw, e)
	}); err != nil {
		return nil, err
	}
	atomic.AddInt64(&ctx.children, 1)
	return p, nil
}

// Close destroys the plan; no Forward may be running on it.
func (p *Plan) Close() {
	if p.raw != nil {
		C.fp8attn_plan_destroy(p.raw)
		p.raw = nil
		atomic.AddInt64(&p.ctx.children, -1)
	}
}

// Tile is (block_m, block_n): query rows per tile and keys per KV block.
func (p *Plan) Tile() (int32, int32, error) {
	var m, n C.int32_t
	err := call("fp8attn_plan_get_tile", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_plan_get_tile(p.raw, &m, &n, e)
	})
	return int32(m), int32(n), err
}

// ForwardArgs are one call's tensors; nil optional tensors are absent.
//
// Training options (the CPU backend only): OutScale is the output scale of an E4M3 output (out =
// E4M3(O · OutScale), saturating); AmaxO, when set, receives max |O| (before the output scale and
// the cast) after success; ScaleState and ScaleStateLayer make the call read the Q, K, V descales
// and the E4M3 output scale from that layer of the state and report the amaxes of O and of the
// scaled logits into it after success. The library refuses per-tensor descales or an OutScale
// together with a state, and a nonzero layer without one. The binding copies OutScale into, and
// AmaxO out of, C memory it owns for the call: cgo forbids Go pointers inside the args struct.
type ForwardArgs struct {
	Q, K, V, Out                 Tensor
	LSE                          Tensor
	CuSeqlensQ, CuSeqlensK       Tensor // packed layout
	MaxSeqlenQ, MaxSeqlenK       int64  // needed with the packed layout
	Batch                        int64  // needed with the packed layout
	QDescale, KDescale, VDescale Tensor
	OutScale                     *float32
	AmaxO                        *float32
	ScaleState                   *ScaleState
	ScaleStateLayer              int32
	// Paged, when set, makes K and V the caches [num_pages, page_size, heads_kv, head_dim] of a
	// paged KV cache (a plan with PageSize); CuSeqlensK is then absent, and packed q needs
	// CuSeqlensQ, Batch and MaxSeqlenQ.
	Paged *PagedKV
}

// KVScaleGranularity is how a paged E4M3 cache's descales are laid out.
type KVScaleGranularity int32

const (
	KVScaleNone         KVScaleGranularity = C.FP8ATTN_KV_SCALE_NONE
	KVScalePerHead      KVScaleGranularity = C.FP8ATTN_KV_SCALE_PER_HEAD       // F32 [heads_kv]
	KVScalePerTokenHead KVScaleGranularity = C.FP8ATTN_KV_SCALE_PER_TOKEN_HEAD // F32 [num_pages, page_size, heads_kv]
)

// PagedKV is fp8attn_paged_kv without the caches (ForwardArgs.K and V): the block table
// (int32 [batch, max_pages_per_seq], any strides), seqused_k (int32 [batch]), their bound and the
// cache's descales. Query i of a q_len-long chunk sees keys ≤ seqused_k − q_len + i when causal.
type PagedKV struct {
	BlockTable, SequsedK Tensor
	MaxSeqlenK           int64
	ScaleGranularity     KVScaleGranularity
	KDescale, VDescale   Tensor
}

// describePaged fills C memory the caller frees: cgo forbids a Go pointer in args.next.
func describePaged(pk *PagedKV, k, v C.fp8attn_tensor) (*C.fp8attn_paged_kv, error) {
	out := (*C.fp8attn_paged_kv)(C.calloc(1, C.sizeof_fp8attn_paged_kv))
	out.struct_size = C.size_t(C.sizeof_fp8attn_paged_kv)
	out.struct_type = C.FP8ATTN_STRUCT_TYPE_PAGED_KV
	out.scale_granularity = C.int32_t(pk.ScaleGranularity)
	out.k_cache, out.v_cache = k, v
	out.max_seqlen_k = C.int64_t(pk.MaxSeqlenK)
	for _, f := range []struct {
		dst *C.fp8attn_tensor
		src Tensor
	}{{&out.block_table, pk.BlockTable}, {&out.seqused_k, pk.SequsedK}, {&out.k_descale, pk.KDescale},
		{&out.v_descale, pk.VDescale}} {
		t, err := optional(f.src)
		if err != nil {
			C.free(unsafe.Pointer(out))
			return nil, err
		}
		*f.dst = t
	}
	return out, nil
}

// Telemetry is the forward call's numerics (desc Telemetry(true)).
type Telemetry struct {
	PPositive, PUnderflow uint64
	MaxAbsScaledLogit     float32
}

func optional(t Tensor) (C.fp8attn_tensor, error) {
	if t == nil {
		return C.fp8attn_tensor{}, nil
	}
	return t.describe()
}

// Forward runs the plan with a host workspace from fp8attn_host_alloc.
func (p *Plan) Forward(a *ForwardArgs) (*Telemetry, error) {
	var args C.fp8attn_attention_args
	args.struct_size = C.size_t(C.sizeof_fp8attn_attention_args)
	fields := []struct {
		dst *C.fp8attn_tensor
		src Tensor
	}{{&args.q, a.Q}, {&args.k, a.K}, {&args.v, a.V}, {&args.out, a.Out}, {&args.lse, a.LSE},
		{&args.cu_seqlens_q, a.CuSeqlensQ}, {&args.cu_seqlens_k, a.CuSeqlensK}, {&args.q_descale, a.QDescale},
		{&args.k_descale, a.KDescale}, {&args.v_descale, a.VDescale}}
	for i, f := range fields {
		if i < 4 && f.src == nil {
			return nil, bindingError(StatusInvalidArgument, "q, k, v and out are required")
		}
		t, err := optional(f.src)
		if err != nil {
			return nil, err
		}
		*f.dst = t
	}
	var batch, sq, sk int64
	var err error
	if a.Paged != nil {
		paged, perr := describePaged(a.Paged, args.k, args.v)
		if perr != nil {
			return nil, perr
		}
		defer C.free(unsafe.Pointer(paged))
		args.k, args.v = C.fp8attn_tensor{}, C.fp8attn_tensor{}
		args.next = unsafe.Pointer(paged)
		batch, sq, sk = a.Batch, a.MaxSeqlenQ, a.Paged.MaxSeqlenK
		if a.CuSeqlensQ == nil && args.q.rank == 4 {
			batch, sq = int64(args.q.shape[0]), int64(args.q.shape[1])
		}
		batch, sq, sk = max1(batch), max1(sq), max1(sk)
	} else {
		batch, sq, sk, err = problemSizes(&args.q, &args.k, a.CuSeqlensQ != nil, a.Batch, a.MaxSeqlenQ, a.MaxSeqlenK)
		if err != nil {
			return nil, err
		}
	}
	var bytes C.size_t
	if err := call("fp8attn_plan_workspace_size", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_plan_workspace_size(p.raw, C.int64_t(batch), C.int64_t(sq), C.int64_t(sk), &bytes, e)
	}); err != nil {
		return nil, err
	}
	ws, err := hostWorkspace(bytes)
	if err != nil {
		return nil, err
	}
	defer C.fp8attn_host_free(ws)
	// The telemetry struct and the two scalars live in C memory: a Go pointer inside args would
	// break cgo's rules.
	tele := (*C.fp8attn_telemetry)(C.calloc(1, C.sizeof_fp8attn_telemetry))
	defer C.free(unsafe.Pointer(tele))
	tele.struct_size = C.size_t(C.sizeof_fp8attn_telemetry)
	args.telemetry = tele
	scalars := (*[2]C.float)(C.calloc(2, C.sizeof_float)) // out_scale, amax_o
	defer C.free(unsafe.Pointer(scalars))
	if a.OutScale != nil {
		scalars[0] = C.float(*a.OutScale)
		args.out_scale = &scalars[0]
	}
	if a.AmaxO != nil {
		args.amax_o = &scalars[1]
	}
	if a.ScaleState != nil {
		args.scale_state = a.ScaleState.raw
	}
	args.scale_state_layer = C.int32_t(a.ScaleStateLayer)
	err = call("fp8attn_attention_forward", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_attention_forward(p.raw, &args, ws, bytes, nil, e)
	})
	runtime.KeepAlive(a) // the HostTensors' finalizers must not run during the call
	if err == nil && a.AmaxO != nil {
		*a.AmaxO = float32(scalars[1])
	}
	if err != nil || !p.telemetry {
		return nil, err
	}
	return &Telemetry{PPositive: uint64(tele.p_positive), PUnderflow: uint64(tele.p_underflow),
		MaxAbsScaledLogit: float32(tele.max_abs_scaled_logit)}, nil
}

// problemSizes is (batch, max_seqlen_q, max_seqlen_k) for a workspace query, each at least 1:
// from the padded q and k, or the caller's figures for the packed layout.
func problemSizes(q, k *C.fp8attn_tensor, packed bool, batch, sq, sk int64) (int64, int64, int64, error) {
	if !packed {
		if q.rank != 4 || k.rank != 4 {
			return 0, 0, 0, bindingError(StatusBadShape, "padded q and k are [batch, seqlen, heads, head_dim]")
		}
		batch, sq, sk = int64(q.shape[0]), int64(q.shape[1]), int64(k.shape[1])
	}
	return max1(batch), max1(sq), max1(sk), nil
}

// hostWorkspace is C memory from fp8attn_host_alloc; the caller frees it with fp8attn_host_free.
func hostWorkspace(bytes C.size_t) (unsafe.Pointer, error) {
	var ws unsafe.Pointer
	err := call("fp8attn_host_alloc", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_host_alloc(bytes, 0, &ws, e)
	})
	return ws, err
}

func max1(x int64) int64 {
	if x < 1 {
		return 1
	}
	return x
}
