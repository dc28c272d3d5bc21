//go:build !go1.23

package fp8attn

import (
	"unsafe"
	_ "unsafe" // go:linkname
)

// isGoPointer is the runtime's own test behind cgo's pointer checks: p points into the Go heap
// or a Go module's data or bss. NOTE: linked by name from the runtime, which Go 1.23 restricts;
// Debian's Go is 1.19. The body-less declaration needs gopointer.s in the package.
//
//go:linkname isGoPointer runtime.cgoIsGoPointer
func isGoPointer(p unsafe.Pointer) bool
