package fp8attn

/*
#include "fp8attn/fp8attn.h"
*/
import "C"

import "runtime"

// KvAppendArgs are one append's tensors (the header's fp8attn_kv_append_args): K [tokens,
// heads_kv, head_dim] and V [tokens, heads_kv, head_dim_v] in BF16, F32 or E4M3 (copied as it
// is); KCache and VCache [num_pages, page_size, heads_kv, dim] in E4M3 or BF16; SlotMapping I64
// [tokens], a negative slot skipping its token. Rotate multiplies K's rows by H·D first (Seed
// picks D).
type KvAppendArgs struct {
	K, V, KCache, VCache, SlotMapping Tensor
	ScaleGranularity                  KVScaleGranularity
	Rotate                            bool
	Seed                              uint64
	KDescale, VDescale                Tensor // with a granularity other than KVScaleNone (plan.go)
}

// KvAppend writes the new tokens' K and V into the paged cache (fp8attn_kv_append_async with no
// stream: host memory on a CPU context). The caches and per-(token, head) descales are written
// only on success, and only at the given slots.
func (c *Context) KvAppend(a *KvAppendArgs) error {
	var args C.fp8attn_kv_append_args
	args.struct_size = C.size_t(C.sizeof_fp8attn_kv_append_args)
	fields := []struct {
		dst *C.fp8attn_tensor
		src Tensor
	}{{&args.k, a.K}, {&args.v, a.V}, {&args.k_cache, a.KCache}, {&args.v_cache, a.VCache},
		{&args.slot_mapping, a.SlotMapping}, {&args.k_descale, a.KDescale}, {&args.v_descale, a.VDescale}}
	for i, f := range fields {
		if i < 5 && f.src == nil {
			return bindingError(StatusInvalidArgument, "k, v, k_cache, v_cache and slot_mapping are required")
		}
		t, err := optional(f.src)
		if err != nil {
			return err
		}
		*f.dst = t
	}
	args.scale_granularity = C.int32_t(a.ScaleGranularity)
	if a.Rotate {
		args.rotate = 1
	}
	args.seed = C.uint64_t(a.Seed)
	err := call("fp8attn_kv_append_async", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_kv_append_async(c.raw, &args, nil, e)
	})
	runtime.KeepAlive(a) // the HostTensors' finalizers must not run during the call
	return err
}
