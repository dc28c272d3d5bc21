// Package fp8attn is a cgo binding of libfp8attn (include/fp8attn/fp8attn.h): FP8 attention for
// Hopper GPUs with a kernel-faithful CPU backend.
//
// Host tensors live in C memory (HostTensor, from fp8attn_host_alloc), exposed to Go as slices:
// Go 1.19 has no runtime.Pinner, and cgo forbids the Go pointers that a Go-allocated tensor would
// put inside fp8attn_attention_args. Device tensors are plain uintptr addresses. Every call
// passes its own error struct (goroutines move between threads, so nothing is thread-local).
// Context, Plan and ScaleState are safe for concurrent use, as the header documents.
//
// Build against an installed tree: PKG_CONFIG_PATH=<prefix>/lib/pkgconfig go build.
package fp8attn

/*
#cgo pkg-config: fp8attn
#include <stdlib.h>
#include "fp8attn/fp8attn.h"
*/
import "C"

import (
	"errors"
	"fmt"
)

// Error is a failed call: the status code and name, and the message the same call wrote.
type Error struct {
	Status  int32
	Name    string
	Message string
	Call    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, e.Status, e.Message)
}

// Category is the thousands digit: 1 bad argument, 2 unsupported, 3 resource, 4 device, 5
// internal, 6 numerics.
func (e *Error) Category() int32 { return e.Status / 1000 }

// Unwrap lets errors.Is(err, ErrGoPointer) see the binding's refusal of Go memory.
func (e *Error) Unwrap() error {
	if e.Call == goPointerCall {
		return ErrGoPointer
	}
	return nil
}

// ErrGoPointer: memory handed to the library was Go memory (see WrapHost).
var ErrGoPointer = errors.New("fp8attn: Go memory cannot be passed to the library; use NewHostTensor")

// Status codes the binding's own checks and its tests use.
const (
	StatusInvalidArgument    = int32(C.FP8ATTN_STATUS_INVALID_ARGUMENT)
	StatusNullPointer        = int32(C.FP8ATTN_STATUS_NULL_POINTER)
	StatusBadOption          = int32(C.FP8ATTN_STATUS_BAD_OPTION)
	StatusBadStream          = int32(C.FP8ATTN_STATUS_BAD_STREAM)
	StatusUnsupported        = int32(C.FP8ATTN_STATUS_UNSUPPORTED)
	StatusUnsupportedDtype   = int32(C.FP8ATTN_STATUS_UNSUPPORTED_DTYPE)
	StatusBadShape           = int32(C.FP8ATTN_STATUS_BAD_SHAPE)
	StatusBadStride          = int32(C.FP8ATTN_STATUS_BAD_STRIDE)
	StatusBadScale           = int32(C.FP8ATTN_STATUS_BAD_SCALE)
	StatusBadSeqlens         = int32(C.FP8ATTN_STATUS_BAD_SEQLENS)
	StatusBadHeads           = int32(C.FP8ATTN_STATUS_BAD_HEADS)
	StatusBadHandle          = int32(C.FP8ATTN_STATUS_BAD_HANDLE)
	StatusBadDtype           = int32(C.FP8ATTN_STATUS_BAD_DTYPE)
	StatusUnsupportedHeadDim = int32(C.FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM)
	StatusChecksumMismatch   = int32(C.FP8ATTN_STATUS_CHECKSUM_MISMATCH)
	StatusTruncatedBlob      = int32(C.FP8ATTN_STATUS_TRUNCATED_BLOB)
	StatusCudaBackendMissing = int32(C.FP8ATTN_STATUS_CUDA_BACKEND_MISSING)
)

const goPointerCall = "fp8attn.WrapHost"

// StatusName is the header's name of a status code.
func StatusName(status int32) string { return C.GoString(C.fp8attn_status_name(C.int32_t(status))) }

// Version is the loaded library's (major, minor, patch).
func Version() (int, int, int) {
	v := int(C.fp8attn_get_version())
	return v / 10000, v / 100 % 100, v % 100
}

func bindingError(status int32, format string, args ...interface{}) error {
	return &Error{Status: status, Name: StatusName(status), Message: fmt.Sprintf(format, args...),
		Call: "fp8attn (Go binding)"}
}

// call runs one entry point with its own error struct, in Go memory that holds no Go pointer.
func call(name string, f func(err *C.fp8attn_error) C.int32_t) error {
	var e C.fp8attn_error
	e.struct_size = C.size_t(C.sizeof_fp8attn_error)
	status := int32(f(&e))
	if status == 0 {
		return nil
	}
	return &Error{Status: status, Name: StatusName(status), Message: C.GoString(&e.message[0]), Call: name}
}
