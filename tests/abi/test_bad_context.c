/* Bad input for fp8attn_context_create, fp8attn_context_get_backend and
 * fp8attn_attention_desc_init, and sanity of fp8attn_get_version and fp8attn_status_name.
 * The out handle (poisoned) must be unchanged after a failure. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "abi_harness.h"

#define POISON_CONTEXT ((fp8attn_context)(uintptr_t)0xA5A5A5A5u)

static fp8attn_context_options valid_options(void) {
  fp8attn_context_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CPU;
  o.num_threads = 1;
  return o;
}

static void expect_create(const char* what, const fp8attn_context_options* options, int32_t want, const char* needle) {
  fp8attn_error err = abi_fresh_error();
  fp8attn_context ctx = POISON_CONTEXT;
  const int32_t status = fp8attn_context_create(options, &ctx, &err);
  abi_expect_status(what, status, want, &err, needle);
  abi_check(ctx == POISON_CONTEXT, what, "the out handle was written by a failing call");
  if (ctx != POISON_CONTEXT) fp8attn_context_destroy(ctx);
}

static void context_create_cases(void) {
  fp8attn_context_options o;
  fp8attn_error err = abi_fresh_error();
  const int dummy = 0;
  int32_t status;

  o = valid_options();
  status = fp8attn_context_create(&o, NULL, &err);
  abi_expect_status("out NULL", status, FP8ATTN_STATUS_NULL_POINTER, &err, "out");
  o = valid_options(), o.struct_size = 0;
  expect_create("options.struct_size 0", &o, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "struct_size");
  o = valid_options(), o.struct_size = offsetof(fp8attn_context_options, log_level);
  expect_create("options.struct_size too small", &o, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "struct_size");
  o = valid_options(), o.next = &dummy;
  expect_create("options.next not NULL", &o, FP8ATTN_STATUS_BAD_EXTENSION, "next");
  o = valid_options(), o.backend = 17;
  expect_create("backend unknown", &o, FP8ATTN_STATUS_BAD_OPTION, "backend");
  o = valid_options(), o.backend = -1;
  expect_create("backend negative", &o, FP8ATTN_STATUS_BAD_OPTION, "backend");
  o = valid_options(), o.log_level = 42;
  expect_create("log_level unknown", &o, FP8ATTN_STATUS_BAD_OPTION, "log_level");
  o = valid_options(), o.num_threads = -3;
  expect_create("num_threads negative", &o, FP8ATTN_STATUS_BAD_OPTION, "num_threads");
  o = valid_options(), o.device_ordinal = -1;
  expect_create("device_ordinal negative", &o, FP8ATTN_STATUS_BAD_OPTION, "device_ordinal");

  /* CUDA asked for where its library cannot be loaded (ctest points FP8ATTN_CUDA_BACKEND at a
   * missing file, and this build has no libfp8attn_cuda): a 4xxx status naming the library. */
  o = valid_options(), o.backend = FP8ATTN_BACKEND_CUDA;
#if !FP8ATTN_TEST_CUDA_BACKEND_BUILT
  expect_create("CUDA backend requested without its library", &o, FP8ATTN_STATUS_CUDA_BACKEND_MISSING,
                "libfp8attn_cuda");
#else
  {
    /* The library is built next to libfp8attn: it loads, and only a missing driver or device
     * (4002) or a device that is not sm_90 (4003) can refuse; a Hopper machine succeeds. */
    fp8attn_context ctx = POISON_CONTEXT;
    err = abi_fresh_error();
    status = fp8attn_context_create(&o, &ctx, &err);
    printf("CUDA backend with libfp8attn_cuda built: %s: %s\n", fp8attn_status_name(status), err.message);
    if (status == FP8ATTN_OK)
      fp8attn_context_destroy(ctx);
    else
      abi_check((status == FP8ATTN_STATUS_NO_CUDA_DEVICE || status == FP8ATTN_STATUS_UNSUPPORTED_DEVICE) &&
                    ctx == POISON_CONTEXT && err.message[0] != '\0',
                "CUDA backend", "unexpected %s", fp8attn_status_name(status));
  }
#endif
}

static void auto_and_get_backend_cases(void) {
  fp8attn_context_options o = valid_options();
  fp8attn_context ctx = NULL;
  fp8attn_error err = abi_fresh_error();
  int32_t backend = 0x5A5A5A5A, status;

  o.backend = FP8ATTN_BACKEND_AUTO;
  o.log_level = FP8ATTN_LOG_OFF;
  status = fp8attn_context_create(&o, &ctx, &err);
  abi_check(status == FP8ATTN_OK && ctx != NULL, "AUTO backend", "%s: %s", fp8attn_status_name(status), err.message);
  if (ctx == NULL) return;
  status = fp8attn_context_get_backend(ctx, &backend, &err);
  printf("AUTO resolved to backend %d (%s)\n", (int)backend, fp8attn_status_name(status));
#if !FP8ATTN_TEST_CUDA_BACKEND_BUILT
  abi_check(status == FP8ATTN_OK && backend == FP8ATTN_BACKEND_CPU, "AUTO backend",
            "expected the CPU fallback without libfp8attn_cuda, got %d", (int)backend);
#else
  abi_check(status == FP8ATTN_OK && (backend == FP8ATTN_BACKEND_CPU || backend == FP8ATTN_BACKEND_CUDA),
            "AUTO backend", "resolved to %d", (int)backend);
#endif

  backend = 0x5A5A5A5A;
  err = abi_fresh_error();
  status = fp8attn_context_get_backend(NULL, &backend, &err);
  abi_expect_status("get_backend: ctx NULL", status, FP8ATTN_STATUS_BAD_HANDLE, &err, "ctx");
  abi_check(backend == 0x5A5A5A5A, "get_backend: ctx NULL", "backend written on failure");
  err = abi_fresh_error();
  status = fp8attn_context_get_backend(ctx, NULL, &err);
  abi_expect_status("get_backend: backend NULL", status, FP8ATTN_STATUS_NULL_POINTER, &err, "backend");
  fp8attn_context_destroy(ctx);
  fp8attn_context_destroy(NULL); /* allowed */
}

static void desc_init_and_names(void) {
  const int32_t version = fp8attn_get_version();
  const int32_t unknown[] = {-1, 1, 999, 1999, 7000, INT32_MIN, INT32_MAX};
  size_t i;

  abi_check(fp8attn_attention_desc_init(NULL) == FP8ATTN_STATUS_NULL_POINTER, "desc_init(NULL)",
            "expected FP8ATTN_STATUS_NULL_POINTER");
  printf("version %d, header %d.%d.%d\n", (int)version, FP8ATTN_VERSION_MAJOR, FP8ATTN_VERSION_MINOR,
         FP8ATTN_VERSION_PATCH);
  abi_check(version == FP8ATTN_VERSION_MAJOR * 10000 + FP8ATTN_VERSION_MINOR * 100 + FP8ATTN_VERSION_PATCH,
            "fp8attn_get_version", "library %d differs from the header", (int)version);
  for (i = 0; i < sizeof unknown / sizeof unknown[0]; ++i) {
    const char* name = fp8attn_status_name(unknown[i]);
    abi_check(name != NULL && strcmp(name, "FP8ATTN_STATUS_UNKNOWN") == 0, "fp8attn_status_name",
              "unknown code %d -> %s", (int)unknown[i], name ? name : "(null)");
  }
  /* Every code the header defines has its own name. */
  {
    static const struct {
      int32_t code;
      const char* name;
    } all[] = {
        {FP8ATTN_OK, "FP8ATTN_OK"},
        {FP8ATTN_STATUS_INVALID_ARGUMENT, "FP8ATTN_STATUS_INVALID_ARGUMENT"},
        {FP8ATTN_STATUS_NULL_POINTER, "FP8ATTN_STATUS_NULL_POINTER"},
        {FP8ATTN_STATUS_BAD_STRUCT_SIZE, "FP8ATTN_STATUS_BAD_STRUCT_SIZE"},
        {FP8ATTN_STATUS_BAD_EXTENSION, "FP8ATTN_STATUS_BAD_EXTENSION"},
        {FP8ATTN_STATUS_BAD_DTYPE, "FP8ATTN_STATUS_BAD_DTYPE"},
        {FP8ATTN_STATUS_BAD_SHAPE, "FP8ATTN_STATUS_BAD_SHAPE"},
        {FP8ATTN_STATUS_BAD_STRIDE, "FP8ATTN_STATUS_BAD_STRIDE"},
        {FP8ATTN_STATUS_BAD_SCALE, "FP8ATTN_STATUS_BAD_SCALE"},
        {FP8ATTN_STATUS_BAD_SEQLENS, "FP8ATTN_STATUS_BAD_SEQLENS"},
        {FP8ATTN_STATUS_BAD_HEADS, "FP8ATTN_STATUS_BAD_HEADS"},
        {FP8ATTN_STATUS_BAD_OPTION, "FP8ATTN_STATUS_BAD_OPTION"},
        {FP8ATTN_STATUS_BAD_DEVICE, "FP8ATTN_STATUS_BAD_DEVICE"},
        {FP8ATTN_STATUS_BAD_HANDLE, "FP8ATTN_STATUS_BAD_HANDLE"},
        {FP8ATTN_STATUS_BAD_STREAM, "FP8ATTN_STATUS_BAD_STREAM"},
        {FP8ATTN_STATUS_UNSUPPORTED, "FP8ATTN_STATUS_UNSUPPORTED"},
        {FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM, "FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM"},
        {FP8ATTN_STATUS_UNSUPPORTED_DTYPE, "FP8ATTN_STATUS_UNSUPPORTED_DTYPE"},
        {FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, "FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND"},
        {FP8ATTN_STATUS_OUT_OF_MEMORY, "FP8ATTN_STATUS_OUT_OF_MEMORY"},
        {FP8ATTN_STATUS_WORKSPACE_TOO_SMALL, "FP8ATTN_STATUS_WORKSPACE_TOO_SMALL"},
        {FP8ATTN_STATUS_BUFFER_TOO_SMALL, "FP8ATTN_STATUS_BUFFER_TOO_SMALL"},
        {FP8ATTN_STATUS_DEVICE_ERROR, "FP8ATTN_STATUS_DEVICE_ERROR"},
        {FP8ATTN_STATUS_CUDA_BACKEND_MISSING, "FP8ATTN_STATUS_CUDA_BACKEND_MISSING"},
        {FP8ATTN_STATUS_NO_CUDA_DEVICE, "FP8ATTN_STATUS_NO_CUDA_DEVICE"},
        {FP8ATTN_STATUS_UNSUPPORTED_DEVICE, "FP8ATTN_STATUS_UNSUPPORTED_DEVICE"},
        {FP8ATTN_STATUS_INTERNAL, "FP8ATTN_STATUS_INTERNAL"},
        {FP8ATTN_STATUS_NUMERICS, "FP8ATTN_STATUS_NUMERICS"},
        {FP8ATTN_STATUS_CHECKSUM_MISMATCH, "FP8ATTN_STATUS_CHECKSUM_MISMATCH"},
        {FP8ATTN_STATUS_BAD_BLOB_VERSION, "FP8ATTN_STATUS_BAD_BLOB_VERSION"},
        {FP8ATTN_STATUS_TRUNCATED_BLOB, "FP8ATTN_STATUS_TRUNCATED_BLOB"},
    };
    for (i = 0; i < sizeof all / sizeof all[0]; ++i) {
      const char* name = fp8attn_status_name(all[i].code);
      abi_check(name != NULL && strcmp(name, all[i].name) == 0, "fp8attn_status_name", "%d -> %s, expected %s",
                (int)all[i].code, name ? name : "(null)", all[i].name);
    }
    printf("fp8attn_status_name: %zu defined codes checked\n", sizeof all / sizeof all[0]);
  }
}

int main(void) {
  context_create_cases();
  auto_and_get_backend_cases();
  desc_init_and_names();
  return abi_finish();
}
