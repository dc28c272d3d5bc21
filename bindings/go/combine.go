package fp8attn

/*
#include "fp8attn/fp8attn.h"
*/
import "C"

import "runtime"

// MaxCombineParts is the most partial results AttentionCombine merges in one call.
const MaxCombineParts = int(C.FP8ATTN_MAX_COMBINE_PARTS)

// CombineArgs are fp8attn_attention_combine's tensors: PartialOut [num_parts, tokens, heads,
// head_dim] F32 or BF16, PartialLSE F32 [num_parts, tokens, heads] (natural log; −inf marks a
// part with no visible key, whose O is not read), Out [tokens, heads, head_dim] F32 or BF16, and
// LSE F32 [tokens, heads] (optional). Any strides: a forward's LSE is [heads, tokens], so the
// stacked LSEs of the parts can be passed as a View with strides [heads·tokens, 1, tokens].
type CombineArgs struct {
	PartialOut, PartialLSE Tensor
	Out                    Tensor
	LSE                    Tensor // nil: not written
}

// AttentionCombine merges partial attention results over disjoint key sets (split-KV, a shared
// prefix and a suffix, context-parallel shards): lse = log Σ_p exp(lse_p) and
// out = Σ_p exp(lse_p − lse)·O_p in FP32, parts in index order. A row whose parts are all empty
// gets out 0 and lse −inf. The workspace, if the library asks for one, is host memory.
func (c *Context) AttentionCombine(a *CombineArgs) error {
	if a.PartialOut == nil || a.PartialLSE == nil || a.Out == nil {
		return bindingError(StatusInvalidArgument, "PartialOut, PartialLSE and Out are required")
	}
	var args C.fp8attn_combine_args
	args.struct_size = C.size_t(C.sizeof_fp8attn_combine_args)
	for _, f := range []struct {
		dst *C.fp8attn_tensor
		src Tensor
	}{{&args.partial_out, a.PartialOut}, {&args.partial_lse, a.PartialLSE}, {&args.out, a.Out}, {&args.lse, a.LSE}} {
		t, err := optional(f.src)
		if err != nil {
			return err
		}
		*f.dst = t
	}
	var bytes C.size_t
	if err := call("fp8attn_attention_combine_workspace_size", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_attention_combine_workspace_size(c.raw, &args, &bytes, e)
	}); err != nil {
		return err
	}
	ws, err := hostWorkspace(bytes)
	if err != nil {
		return err
	}
	defer C.fp8attn_host_free(ws)
	err = call("fp8attn_attention_combine", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_attention_combine(c.raw, &args, ws, bytes, nil, e)
	})
	runtime.KeepAlive(a) // the HostTensors' finalizers must not run during the call
	return err
}
