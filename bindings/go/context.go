package fp8attn

/*
#include <stdlib.h>
#include <stdint.h>
#include "fp8attn/fp8attn.h"
void fp8attn_go_log_trampoline(void* user_data, int32_t level, const char* msg, size_t len);
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Backend is the header's fp8attn_backend.
type Backend int32

const (
	BackendAuto      Backend = C.FP8ATTN_BACKEND_AUTO
	BackendCPU       Backend = C.FP8ATTN_BACKEND_CPU
	BackendCUDA      Backend = C.FP8ATTN_BACKEND_CUDA
	BackendReference Backend = C.FP8ATTN_BACKEND_REFERENCE
	// BackendEmulator runs the Hopper kernels under the SIMT emulator (FP8ATTN_BACKEND_EMULATOR,
	// added after 0.1; older libraries answer FP8ATTN_STATUS_BAD_OPTION).
	BackendEmulator Backend = 4
)

// LogLevel is the header's fp8attn_log_level.
type LogLevel int32

const (
	LogDefault LogLevel = C.FP8ATTN_LOG_DEFAULT
	LogError   LogLevel = C.FP8ATTN_LOG_ERROR
	LogWarn    LogLevel = C.FP8ATTN_LOG_WARN
	LogInfo    LogLevel = C.FP8ATTN_LOG_INFO
	LogDebug   LogLevel = C.FP8ATTN_LOG_DEBUG
	LogTrace   LogLevel = C.FP8ATTN_LOG_TRACE
	LogOff     LogLevel = C.FP8ATTN_LOG_OFF
)

// LogFunc receives the library's messages, from any thread using the context, concurrently.
type LogFunc func(level LogLevel, message string)

// ContextOptions: zeros are the library's defaults.
type ContextOptions struct {
	Backend       Backend
	DeviceOrdinal int32
	NumThreads    int32
	LogLevel      LogLevel
	Log           LogFunc
}

type logSink struct {
	fn     LogFunc
	panics int64
}

// Context is a backend, its worker threads and its logger. Safe for concurrent use; Close it
// after every Plan and ScaleState made from it.
type Context struct {
	raw      C.fp8attn_context
	handle   cgo.Handle
	userData unsafe.Pointer // C memory holding the handle, the log callback's user_data
	sink     *logSink
	children int64
	mu       sync.Mutex
}

// NewContext creates a context.
func NewContext(o ContextOptions) (*Context, error) {
	var opts C.fp8attn_context_options
	opts.struct_size = C.size_t(C.sizeof_fp8attn_context_options)
	opts.backend = C.int32_t(o.Backend)
	opts.device_ordinal = C.int32_t(o.DeviceOrdinal)
	opts.num_threads = C.int32_t(o.NumThreads)
	opts.log_level = C.int32_t(o.LogLevel)
	c := &Context{}
	if o.Log != nil {
		// NOTE: the library gets a pointer to C memory holding a cgo.Handle, never a Go pointer.
		c.sink = &logSink{fn: o.Log}
		c.handle = cgo.NewHandle(c.sink)
		c.userData = C.malloc(C.size_t(unsafe.Sizeof(uintptr(0))))
		*(*cgo.Handle)(c.userData) = c.handle
		opts.log_callback = C.fp8attn_log_callback(C.fp8attn_go_log_trampoline)
		opts.log_user_data = c.userData
	}
	if err := call("fp8attn_context_create", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_context_create(&opts, &c.raw, e)
	}); err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

func (c *Context) release() {
	if c.userData != nil {
		c.handle.Delete()
		C.free(c.userData)
		c.userData = nil
	}
}

// Backend is the backend the context runs on (never BackendAuto).
func (c *Context) Backend() (Backend, error) {
	var b C.int32_t
	err := call("fp8attn_context_get_backend", func(e *C.fp8attn_error) C.int32_t {
		return C.fp8attn_context_get_backend(c.raw, &b, e)
	})
	return Backend(b), err
}

// LogPanics counts the log callback's panics, each recovered before it reached C.
func (c *Context) LogPanics() int64 {
	if c.sink == nil {
		return 0
	}
	return atomic.LoadInt64(&c.sink.panics)
}

// Close destroys the context; it refuses while plans or scale states made from it are open.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := atomic.LoadInt64(&c.children); n > 0 {
		return bindingError(StatusBadHandle, "%d plans or scale states of this context are still open", n)
	}
	if c.raw != nil {
		C.fp8attn_context_destroy(c.raw)
		c.raw = nil
		c.release()
	}
	runtime.KeepAlive(c)
	return nil
}

//export fp8attnGoLog
func fp8attnGoLog(userData unsafe.Pointer, level C.int32_t, msg *C.char, n C.size_t) {
	sink := (*(*cgo.Handle)(userData)).Value().(*logSink)
	defer func() {
		// A panic must not unwind through the library's C frames.
		if recover() != nil {
			atomic.AddInt64(&sink.panics, 1)
		}
	}()
	sink.fn(LogLevel(level), C.GoStringN(msg, C.int(n)))
}
