/* The C side of the Go log callback: the library calls this with its user_data (C memory that
 * holds a cgo.Handle); it forwards to the exported Go function. */
#include <stddef.h>
#include <stdint.h>

#include "_cgo_export.h"

void fp8attn_go_log_trampoline(void* user_data, int32_t level, const char* msg, size_t len) {
  fp8attnGoLog(user_data, level, (char*)msg, len);
}
