package fp8attn

/*
#include "fp8attn/fp8attn.h"
*/
import "C"

import (
	"math"
	"runtime"
	"unsafe"
)

// DType is an element type (the header's fp8attn_dtype).
type DType int32

const (
	F32  DType = C.FP8ATTN_DTYPE_F32
	F64  DType = C.FP8ATTN_DTYPE_F64
	BF16 DType = C.FP8ATTN_DTYPE_BF16
	F16  DType = C.FP8ATTN_DTYPE_F16
	E4M3 DType = C.FP8ATTN_DTYPE_E4M3
	E5M2 DType = C.FP8ATTN_DTYPE_E5M2
	I32  DType = C.FP8ATTN_DTYPE_I32
	I64  DType = C.FP8ATTN_DTYPE_I64
)

// Size is the element size in bytes.
func (d DType) Size() int {
	switch d {
	case F64, I64:
		return 8
	case F32, I32:
		return 4
	case BF16, F16:
		return 2
	case E4M3, E5M2:
		return 1
	}
	return 0
}

// Tensor is what the library's calls take: a HostTensor, a view of one, a WrapHost of C memory
// or a DeviceTensor. It cannot be implemented outside the package, so every tensor that reaches
// cgo has been checked.
type Tensor interface {
	describe() (C.fp8attn_tensor, error)
}

// HostTensor is a row-major tensor in C memory from fp8attn_host_alloc (zero-filled, 64-byte
// aligned). Free it when done; a finalizer frees it otherwise.
type HostTensor struct {
	ptr     unsafe.Pointer
	bytes   int
	dtype   DType
	shape   []int64
	strides []int64
	base    *HostTensor // for views: the allocation that keeps the memory alive
	offset  int64       // for views: first element
}

// NewHostTensor allocates a zero-filled row-major tensor in C memory.
func NewHostTensor(dtype DType, shape ...int64) (*HostTensor, error) {
	if dtype.Size() == 0 {
		return nil, bindingError(StatusBadDtype, "unknown dtype %d", dtype)
	}
	n := int64(1)
	for _, e := range shape {
		if e < 0 {
			return nil, bindingError(StatusBadShape, "negative extent in %v", shape)
		}
		if e > 0 && n > math.MaxInt64/e/int64(dtype.Size()) {
			return nil, bindingError(StatusBadShape, "shape %v overflows the address space", shape)
		}
		n *= e
	}
	var p unsafe.Pointer
	bytes := int(n) * dtype.Size()
	if err := call("fp8attn_host_alloc", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_host_alloc(C.size_t(bytes), 0, &p, e)
	}); err != nil {
		return nil, err
	}
	t := &HostTensor{ptr: p, bytes: bytes, dtype: dtype, shape: append([]int64(nil), shape...),
		strides: rowMajor(shape)}
	runtime.SetFinalizer(t, (*HostTensor).Free)
	return t, nil
}

func rowMajor(shape []int64) []int64 {
	s := make([]int64, len(shape))
	run := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = run
		if shape[i] > 0 {
			run *= shape[i]
		}
	}
	return s
}

// Free releases the C memory of an allocation (not of a view). Idempotent.
func (t *HostTensor) Free() {
	if t.base == nil && t.ptr != nil {
		C.fp8attn_host_free(t.ptr)
		t.ptr = nil
		runtime.SetFinalizer(t, nil)
	}
}

func (t *HostTensor) root() *HostTensor {
	if t.base != nil {
		return t.base
	}
	return t
}

// Shape and DType describe the tensor.
func (t *HostTensor) Shape() []int64 { return append([]int64(nil), t.shape...) }
func (t *HostTensor) DType() DType   { return t.dtype }

// View is a strided view (strides in elements, 0 broadcasts) of the same allocation, starting
// at element `offset`; it must stay inside the allocation.
func (t *HostTensor) View(offset int64, shape, strides []int64) (*HostTensor, error) {
	r := t.root()
	v := &HostTensor{ptr: r.ptr, bytes: r.bytes, dtype: r.dtype, shape: append([]int64(nil), shape...),
		strides: append([]int64(nil), strides...), base: r, offset: t.offset + offset}
	if _, err := v.describe(); err != nil {
		return nil, err
	}
	return v, nil
}

func (t *HostTensor) slice(d DType, size int) unsafe.Pointer {
	if t.dtype != d && !(size == 1 && t.dtype.Size() == 1) && !(size == 2 && t.dtype.Size() == 2) {
		panic("fp8attn: slice accessor of the wrong dtype")
	}
	if t.root().ptr == nil {
		panic("fp8attn: tensor used after Free")
	}
	return t.root().ptr
}

// Float32s, Float64s, Int32s, Int64s, Uint16s (BF16/F16 bits) and Bytes (E4M3/E5M2 bits) are Go slices
// over the whole allocation's C memory, valid until Free.
func (t *HostTensor) Float32s() []float32 {
	return unsafe.Slice((*float32)(t.slice(F32, 4)), t.root().bytes/4)
}
func (t *HostTensor) Float64s() []float64 {
	return unsafe.Slice((*float64)(t.slice(F64, 8)), t.root().bytes/8)
}
func (t *HostTensor) Int32s() []int32 {
	return unsafe.Slice((*int32)(t.slice(I32, 4)), t.root().bytes/4)
}
func (t *HostTensor) Int64s() []int64 {
	return unsafe.Slice((*int64)(t.slice(I64, 8)), t.root().bytes/8)
}
func (t *HostTensor) Uint16s() []uint16 {
	return unsafe.Slice((*uint16)(t.slice(t.dtype, 2)), t.root().bytes/2)
}
func (t *HostTensor) Bytes() []byte {
	return unsafe.Slice((*byte)(t.slice(t.dtype, 1)), t.root().bytes)
}

func (t *HostTensor) describe() (C.fp8attn_tensor, error) {
	var raw C.fp8attn_tensor
	r := t.root()
	if r.ptr == nil {
		return raw, bindingError(StatusInvalidArgument, "tensor used after Free")
	}
	return fill(raw, unsafe.Add(r.ptr, t.offset*int64(t.dtype.Size())), t.dtype, C.FP8ATTN_DEVICE_HOST, t.shape,
		t.strides, int64(r.bytes/t.dtype.Size())-t.offset)
}

// fill checks shape and strides against `elements` available and writes the descriptor.
func fill(raw C.fp8attn_tensor, data unsafe.Pointer, dtype DType, device C.int32_t, shape, strides []int64,
	elements int64) (C.fp8attn_tensor, error) {
	if len(shape) == 0 || len(shape) > C.FP8ATTN_MAX_RANK || len(shape) != len(strides) {
		return raw, bindingError(StatusBadShape, "rank %d with %d strides", len(shape), len(strides))
	}
	last, empty := int64(0), false
	for i := range shape {
		if shape[i] < 0 {
			return raw, bindingError(StatusBadShape, "negative extent in %v", shape)
		}
		if strides[i] < 0 {
			return raw, bindingError(StatusBadStride, "negative stride in %v", strides)
		}
		empty = empty || shape[i] == 0
		if shape[i] > 0 {
			last += (shape[i] - 1) * strides[i]
		}
	}
	if !empty && elements >= 0 && last >= elements {
		return raw, bindingError(StatusBadShape, "shape %v, strides %v reach element %d of %d", shape, strides, last,
			elements)
	}
	raw.struct_size = C.size_t(C.sizeof_fp8attn_tensor)
	raw.data = data
	raw.dtype = C.int32_t(dtype)
	raw.device = device
	raw.rank = C.int32_t(len(shape))
	for i := range shape {
		raw.shape[i] = C.int64_t(shape[i])
		raw.stride[i] = C.int64_t(strides[i])
	}
	return raw, nil
}

// DeviceTensor is CUDA device memory at a plain address (the library never dereferences it on
// the host).
type DeviceTensor struct {
	Ptr     uintptr
	DType   DType
	Shape   []int64
	Strides []int64
}

func (t DeviceTensor) describe() (C.fp8attn_tensor, error) {
	var raw C.fp8attn_tensor
	// NOTE: a device address is not a Go pointer; it travels through C's own pointer type, with
	// no Go-side dereference.
	return fill(raw, *(*unsafe.Pointer)(unsafe.Pointer(&t.Ptr)), t.DType, C.FP8ATTN_DEVICE_CUDA, t.Shape, t.Strides,
		-1)
}

// cHost is host memory owned by C code elsewhere, wrapped by WrapHost.
type cHost struct {
	ptr      unsafe.Pointer
	elements int64
	dtype    DType
	shape    []int64
	strides  []int64
}

func (t cHost) describe() (C.fp8attn_tensor, error) {
	var raw C.fp8attn_tensor
	return fill(raw, t.ptr, t.dtype, C.FP8ATTN_DEVICE_HOST, t.shape, t.strides, t.elements)
}

// WrapHost describes host memory that C code owns (a C library's buffer, an mmap). It refuses Go
// memory — a slice, a Go array, a new(T) — with an error that wraps ErrGoPointer, before any cgo
// call: cgo forbids a Go pointer stored in the structs the library reads, and without
// runtime.Pinner (Go 1.19) nothing keeps such memory in place. Copy Go data into a HostTensor.
func WrapHost(ptr unsafe.Pointer, bytes int, dtype DType, shape, strides []int64) (Tensor, error) {
	if isGoPointer(ptr) {
		return nil, &Error{Status: StatusInvalidArgument, Name: StatusName(StatusInvalidArgument),
			Message: "the pointer is Go memory; allocate with NewHostTensor (C memory) instead", Call: goPointerCall}
	}
	if dtype.Size() == 0 {
		return nil, bindingError(StatusBadDtype, "unknown dtype %d", dtype)
	}
	return cHost{ptr: ptr, elements: int64(bytes / dtype.Size()), dtype: dtype, shape: shape, strides: strides}, nil
}
