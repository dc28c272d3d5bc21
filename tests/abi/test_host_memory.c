/* fp8attn_host_alloc / fp8attn_host_free: alignment, zero fill, the statuses of bad requests
 * (with outputs untouched), and NULL accepted by free. */
#include <stdint.h>
#include <string.h>

#include "abi_harness.h"

static void allocations(void) {
  static const size_t aligns[] = {0, 1, 2, 8, 64, 256, 4096};
  static const size_t sizes[] = {0, 1, 3, 1000, 1u << 20};
  size_t a, s, i;
  for (a = 0; a < sizeof aligns / sizeof aligns[0]; ++a) {
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
      fp8attn_error err = abi_fresh_error();
      void* p = NULL;
      const size_t want = aligns[a] == 0 ? 64 : aligns[a];
      int zero = 1;
      int32_t status = fp8attn_host_alloc(sizes[s], aligns[a], &p, &err);
      abi_check(status == FP8ATTN_OK && err.status == FP8ATTN_OK && p != NULL, "alloc succeeds",
                "bytes %zu align %zu: %s", sizes[s], aligns[a], fp8attn_status_name(status));
      if (p == NULL) continue;
      abi_check((uintptr_t)p % want == 0, "alloc aligned", "bytes %zu align %zu: %p", sizes[s], aligns[a], p);
      for (i = 0; i < sizes[s]; ++i) zero &= ((unsigned char*)p)[i] == 0;
      abi_check(zero, "alloc zero-filled", "bytes %zu", sizes[s]);
      memset(p, 0x5A, sizes[s]); /* writable over its whole length (ASan checks the bounds) */
      fp8attn_host_free(p);
    }
  }
  fp8attn_host_free(NULL);
  abi_check(1, "free(NULL) returns", "%s", "");
}

static void bad_requests(void) {
  static const size_t bad_aligns[] = {3, 48, 8192, (size_t)1 << 40};
  size_t a;
  for (a = 0; a < sizeof bad_aligns / sizeof bad_aligns[0]; ++a) {
    fp8attn_error err = abi_fresh_error();
    void* p = (void*)&err; /* poison: must stay as it is */
    int32_t status = fp8attn_host_alloc(16, bad_aligns[a], &p, &err);
    abi_expect_status("alignment not a power of two ≤ 4096", status, FP8ATTN_STATUS_INVALID_ARGUMENT, &err,
                      "alignment");
    abi_check(p == (void*)&err, "out untouched on failure", "align %zu", bad_aligns[a]);
  }
  {
    fp8attn_error err = abi_fresh_error();
    int32_t status = fp8attn_host_alloc(16, 0, NULL, &err);
    abi_expect_status("out NULL", status, FP8ATTN_STATUS_NULL_POINTER, &err, "out");
  }
  {
    fp8attn_error err = abi_fresh_error();
    void* p = (void*)&err;
    int32_t status = fp8attn_host_alloc(SIZE_MAX - 4096, 64, &p, &err);
    abi_expect_status("impossible size", status, FP8ATTN_STATUS_OUT_OF_MEMORY, &err, "bytes");
    abi_check(p == (void*)&err, "out untouched on failure", "%s", "huge");
  }
}

int main(void) {
  allocations();
  bad_requests();
  return abi_finish();
}
