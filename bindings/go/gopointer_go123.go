//go:build go1.23

package fp8attn

import "unsafe"

// isGoPointer: Go 1.23 forbids linking runtime.cgoIsGoPointer, so WrapHost cannot tell Go
// memory from C memory and refuses every pointer (use NewHostTensor, or runtime.Pinner with a
// binding made for it).
func isGoPointer(p unsafe.Pointer) bool { return true }
