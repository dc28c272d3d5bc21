package fp8attn

/*
#include "fp8attn/fp8attn.h"
*/
import "C"

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// TensorKind is the header's fp8attn_tensor_kind.
type TensorKind int32

const (
	KindQ     TensorKind = C.FP8ATTN_TENSOR_Q
	KindK     TensorKind = C.FP8ATTN_TENSOR_K
	KindV     TensorKind = C.FP8ATTN_TENSOR_V
	KindO     TensorKind = C.FP8ATTN_TENSOR_O
	KindP     TensorKind = C.FP8ATTN_TENSOR_P
	KindDO    TensorKind = C.FP8ATTN_TENSOR_DO
	KindDP    TensorKind = C.FP8ATTN_TENSOR_DP
	KindLogit TensorKind = C.FP8ATTN_TENSOR_LOGIT
	// NumTensorKinds is the length of a layer's amax vector (ReportAmaxDevice).
	NumTensorKinds = C.FP8ATTN_NUM_TENSOR_KINDS
)

// Recipes of ScaleStateOptions.Recipe (the header's fp8attn_scale_recipe).
const (
	RecipeDefault  int32 = C.FP8ATTN_RECIPE_DEFAULT
	RecipeDelayed  int32 = C.FP8ATTN_RECIPE_DELAYED
	RecipeCurrent  int32 = C.FP8ATTN_RECIPE_CURRENT
	RecipeGeometry int32 = C.FP8ATTN_RECIPE_GEOMETRY
)

// ScaleStateOptions: zeros are the library's defaults; Recipe is per TensorKind (RecipeDefault,
// RecipeDelayed, RecipeCurrent, RecipeGeometry).
type ScaleStateOptions struct {
	NumLayers      int32
	Recipe         [8]int32
	AmaxHistoryLen int32
}

// ScaleState holds FP8 scales; safe for concurrent use (reads shared, updates exclusive).
type ScaleState struct {
	raw C.fp8attn_scale_state
	ctx *Context
}

func NewScaleState(ctx *Context, o ScaleStateOptions) (*ScaleState, error) {
	var opts C.fp8attn_scale_state_options
	opts.struct_size = C.size_t(C.sizeof_fp8attn_scale_state_options)
	opts.num_layers = C.int32_t(o.NumLayers)
	for i, r := range o.Recipe {
		opts.recipe[i] = C.int32_t(r)
	}
	opts.amax_history_len = C.int32_t(o.AmaxHistoryLen)
	s := &ScaleState{ctx: ctx}
	if err := call("fp8attn_scale_state_create", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_scale_state_create(ctx.raw, &opts, &s.raw, e)
	}); err != nil {
		return nil, err
	}
	atomic.AddInt64(&ctx.children, 1)
	return s, nil
}

func (s *ScaleState) Close() {
	if s.raw != nil {
		C.fp8attn_scale_state_destroy(s.raw)
		s.raw = nil
		atomic.AddInt64(&s.ctx.children, -1)
	}
}

func (s *ScaleState) ReportAmax(layer int32, kind TensorKind, amax float32) error {
	return call("fp8attn_scale_state_report_amax", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_scale_state_report_amax(s.raw, C.int32_t(layer), C.int32_t(kind), C.float(amax), e)
	})
}

// ReportAmaxDevice reports one layer's amaxes (NumTensorKinds F32 values in TensorKind order; a
// negative entry skips) from the memory of the state's context's device, as a kernel writes
// them: a HostTensor on the CPU, reference and emulator backends (stream 0), a DeviceTensor and
// a CUDA stream on the CUDA backend, where the report is recorded by a host function on that
// stream after the copy. All entries are checked before any is recorded.
func (s *ScaleState) ReportAmaxDevice(layer int32, amax Tensor, stream uintptr) error {
	if amax == nil {
		return bindingError(StatusInvalidArgument, "amax is required")
	}
	raw, err := amax.describe()
	if err != nil {
		return err
	}
	if raw.dtype != C.FP8ATTN_DTYPE_F32 || raw.rank != 1 || raw.shape[0] != NumTensorKinds || raw.stride[0] != 1 {
		return bindingError(StatusBadShape, "amax must be a contiguous F32 [%d] (dtype %d, rank %d)", NumTensorKinds,
			raw.dtype, raw.rank)
	}
	// NOTE: a stream is an address the library owns, not a Go pointer: it travels as C's pointer type.
	cstream := *(**C.struct_CUstream_st)(unsafe.Pointer(&stream))
	err = call("fp8attn_scale_state_report_amax_device", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_scale_state_report_amax_device(s.raw, C.int32_t(layer), (*C.float)(raw.data), cstream, e)
	})
	runtime.KeepAlive(amax) // a HostTensor's finalizer must not run during the call
	return err
}

func (s *ScaleState) Step() error {
	return call("fp8attn_scale_state_step", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_scale_state_step(s.raw, e)
	})
}

// Scale is (scale, scale_inv).
func (s *ScaleState) Scale(layer int32, kind TensorKind) (float32, float32, error) {
	var sc, inv C.float
	err := call("fp8attn_scale_state_get_scale", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_scale_state_get_scale(s.raw, C.int32_t(layer), C.int32_t(kind), &sc, &inv, e)
	})
	return float32(sc), float32(inv), err
}

// MarshalBinary is the versioned, checksummed blob.
func (s *ScaleState) MarshalBinary() ([]byte, error) {
	var size C.size_t
	if err := call("fp8attn_scale_state_serialize", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_scale_state_serialize(s.raw, nil, 0, &size, e)
	}); err != nil {
		return nil, err
	}
	buf := make([]byte, int(size)) // Go memory without Go pointers: allowed as a cgo argument
	var written C.size_t
	err := call("fp8attn_scale_state_serialize", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_scale_state_serialize(s.raw, unsafe.Pointer(&buf[0]), size, &written, e)
	})
	return buf[:int(written)], err
}

// UnmarshalBinary replaces the whole state with a blob; unchanged on failure.
func (s *ScaleState) UnmarshalBinary(blob []byte) error {
	var p unsafe.Pointer
	if len(blob) > 0 {
		p = unsafe.Pointer(&blob[0])
	}
	return call("fp8attn_scale_state_deserialize", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_scale_state_deserialize(s.raw, p, C.size_t(len(blob)), e)
	})
}
