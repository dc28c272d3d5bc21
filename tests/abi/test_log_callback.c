/* The host log callback of fp8attn_context_options: backend AUTO without libfp8attn_cuda falls
 * back to the CPU and says why at FP8ATTN_LOG_WARN (the default level), through the callback
 * with its user data; FP8ATTN_LOG_ERROR and FP8ATTN_LOG_OFF keep that message away. */
#include <stdio.h>
#include <string.h>

#include "abi_harness.h"

typedef struct log_capture {
  int calls;
  int32_t last_level;
  char text[2048]; /* all messages, newline-separated, truncated */
} log_capture;

static void capture(void* user_data, int32_t level, const char* msg, size_t len) {
  log_capture* c = (log_capture*)user_data;
  const size_t used = strlen(c->text);
  const size_t room = sizeof c->text - used - 2;
  const size_t n = len < room ? len : room;
  ++c->calls;
  c->last_level = level;
  memcpy(c->text + used, msg, n); /* msg holds len bytes and is not NUL-terminated */
  c->text[used + n] = '\n';
  c->text[used + n + 1] = '\0';
}

/* Creates an AUTO context at `level`; returns the capture. */
static log_capture auto_context(int32_t level) {
  log_capture c;
  fp8attn_context_options o;
  fp8attn_context ctx = NULL;
  fp8attn_error err = abi_fresh_error();
  int32_t status, backend = -1;
  memset(&c, 0, sizeof c);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_AUTO;
  o.num_threads = 1;
  o.log_level = level;
  o.log_callback = capture;
  o.log_user_data = &c;
  status = fp8attn_context_create(&o, &ctx, &err);
  abi_check(status == FP8ATTN_OK, "AUTO context", "%s: %s", fp8attn_status_name(status), err.message);
  if (status == FP8ATTN_OK) {
    fp8attn_context_get_backend(ctx, &backend, NULL);
    abi_check(backend == FP8ATTN_BACKEND_CPU, "AUTO context", "backend %d, expected the CPU", (int)backend);
  }
  fp8attn_context_destroy(ctx);
  return c;
}

int main(void) {
  log_capture info, warn, dflt, error, off;
#if FP8ATTN_TEST_CUDA_BACKEND_BUILT
  printf("SKIP: libfp8attn_cuda is built here, so AUTO may pick CUDA\n");
  return 77; /* ctest SKIP_RETURN_CODE */
#endif
  info = auto_context(FP8ATTN_LOG_INFO);
  printf("LOG_INFO: %d callback call(s):\n%s", info.calls, info.text);
  abi_check(info.calls >= 1, "LOG_INFO", "no message through the callback");
  abi_check(strstr(info.text, "CPU") != NULL && strstr(info.text, "libfp8attn_cuda") != NULL, "LOG_INFO",
            "the fallback message does not say CPU and name libfp8attn_cuda");
  warn = auto_context(FP8ATTN_LOG_WARN);
  dflt = auto_context(FP8ATTN_LOG_DEFAULT); /* FP8ATTN_LOG_LEVEL is unset for this test */
  error = auto_context(FP8ATTN_LOG_ERROR);
  off = auto_context(FP8ATTN_LOG_OFF);
  printf("LOG_WARN: %d call(s); default: %d; LOG_ERROR: %d; LOG_OFF: %d\n", warn.calls, dflt.calls, error.calls,
         off.calls);
  abi_check(strstr(warn.text, "falling back") != NULL && strstr(warn.text, "libfp8attn_cuda") != NULL &&
                warn.last_level == FP8ATTN_LOG_WARN,
            "LOG_WARN", "the fallback is not logged at WARN (last level %d)", (int)warn.last_level);
  abi_check(strstr(dflt.text, "falling back") != NULL, "default level", "the fallback is not logged at the default level");
  abi_check(error.calls == 0, "LOG_ERROR", "%d messages", error.calls);
  abi_check(off.calls == 0, "LOG_OFF", "%d messages", off.calls);
  return abi_finish();
}
