/* The error-detail argument: NULL is allowed on success and failure; a truncated fp8attn_error
 * (an older or smaller caller struct) is written only within its struct_size, which a canary
 * right after it checks; the message is always NUL-terminated inside the caller's bytes. */
#include <stdio.h>
#include <string.h>

#include "abi_harness.h"

#define CANARY 0x3C

/* An error struct followed by caller memory that must stay untouched. */
typedef struct guarded_error {
  fp8attn_error e;
  unsigned char guard[64];
} guarded_error;

/* A call that fails with a message of some length: predict with a NULL model. */
static int32_t failing_call(fp8attn_error* err) { return fp8attn_predict_p_underflow(NULL, NULL, NULL, err); }

static void null_err(void) {
  fp8attn_context_options o;
  fp8attn_context ctx = NULL;
  int32_t backend = -1;
  int32_t status;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CPU;
  o.num_threads = 1;
  status = fp8attn_context_create(&o, &ctx, NULL);
  abi_check(status == FP8ATTN_OK && ctx != NULL, "err NULL on success", "%s", fp8attn_status_name(status));
  status = fp8attn_context_get_backend(ctx, &backend, NULL);
  abi_check(status == FP8ATTN_OK && backend == FP8ATTN_BACKEND_CPU, "err NULL on success", "backend %d", (int)backend);
  status = fp8attn_context_get_backend(ctx, NULL, NULL);
  abi_check(status == FP8ATTN_STATUS_NULL_POINTER, "err NULL on failure", "%s", fp8attn_status_name(status));
  status = fp8attn_plan_create(ctx, NULL, NULL, NULL);
  abi_check(status == FP8ATTN_STATUS_NULL_POINTER, "err NULL on failure", "%s", fp8attn_status_name(status));
  status = fp8attn_attention_forward(NULL, NULL, NULL, 0, NULL, NULL);
  abi_check(status == FP8ATTN_STATUS_BAD_HANDLE, "err NULL on failure", "%s", fp8attn_status_name(status));
  status = failing_call(NULL);
  abi_check(status == FP8ATTN_STATUS_NULL_POINTER, "err NULL on failure", "%s", fp8attn_status_name(status));
  printf("err NULL: calls return their status and do not crash\n");
  fp8attn_context_destroy(ctx);
}

/* Calls failing_call with an error of `size` bytes; checks what was written. */
static void truncated(size_t size, int expect_status_written, size_t expect_message_len) {
  guarded_error g;
  char what[64];
  const unsigned char* bytes = (const unsigned char*)&g;
  size_t limit = size < sizeof g.e ? size : sizeof g.e;
  int32_t status;
  sprintf(what, "err.struct_size %zu", size);
  memset(&g, CANARY, sizeof g);
  g.e.struct_size = size;
  status = failing_call(&g.e);
  abi_check(status == FP8ATTN_STATUS_NULL_POINTER, what, "returned %s", fp8attn_status_name(status));
  abi_check(g.e.struct_size == size, what, "struct_size changed to %zu", g.e.struct_size);
  if (limit < sizeof(size_t)) limit = sizeof(size_t);
  abi_check(abi_is_poison(bytes + limit, sizeof g - limit, CANARY), what, "bytes past struct_size were written");
  if (expect_status_written)
    abi_check(g.e.status == FP8ATTN_STATUS_NULL_POINTER, what, "status %d not written", (int)g.e.status);
  else
    abi_check(abi_is_poison(&g.e.status, sizeof g.e.status, CANARY), what, "status written past struct_size");
  if (size > offsetof(fp8attn_error, message)) {
    const size_t room = size - offsetof(fp8attn_error, message);
    size_t len = 0;
    while (len < room && g.e.message[len] != '\0') ++len;
    abi_check(len < room, what, "message not NUL-terminated within struct_size");
    abi_check(len == expect_message_len, what, "message length %zu, expected %zu", len, expect_message_len);
    printf("%-28s status %s, message (%zu bytes): \"%.*s\"\n", what, fp8attn_status_name(g.e.status), len, (int)len,
           g.e.message);
  } else {
    printf("%-28s status %s, no message room\n", what,
           expect_status_written ? fp8attn_status_name(g.e.status) : "(not covered)");
  }
}

int main(void) {
  fp8attn_error full = abi_fresh_error();
  size_t full_len;
  null_err();

  failing_call(&full);
  full_len = strlen(full.message);
  printf("full message: \"%s\"\n", full.message);
  abi_check(full_len > 8, "full-size err", "message too short to test truncation: %zu", full_len);

  truncated(0, 0, 0);
  truncated(4, 0, 0);
  truncated(offsetof(fp8attn_error, status) + sizeof(int32_t), 1, 0);
  truncated(offsetof(fp8attn_error, message), 1, 0);
  truncated(offsetof(fp8attn_error, message) + 1, 1, 0);
  truncated(offsetof(fp8attn_error, message) + 8, 1, 7);
  truncated(sizeof(fp8attn_error), 1, full_len);
  truncated(sizeof(guarded_error), 1, full_len); /* a newer, larger caller struct */
  return abi_finish();
}
