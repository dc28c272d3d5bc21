/* See abi_harness.h. */
#include "abi_harness.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_passed = 0;
static int g_failed = 0;

void abi_check(int ok, const char* what, const char* fmt, ...) {
  va_list ap;
  if (ok) {
    ++g_passed;
    return;
  }
  ++g_failed;
  fprintf(stdout, "[FAIL] %s: ", what);
  va_start(ap, fmt);
  vfprintf(stdout, fmt, ap);
  va_end(ap);
  fputc('\n', stdout);
}

fp8attn_error abi_fresh_error(void) {
  fp8attn_error err;
  memset(&err, 'x', sizeof err);
  err.struct_size = sizeof err;
  err.status = -12345;
  err.message[sizeof err.message - 1] = '\0';
  return err;
}

static size_t bounded_length(const char* s, size_t max) {
  size_t n = 0;
  while (n < max && s[n] != '\0') ++n;
  return n;
}

void abi_expect_status(const char* what, int32_t got, int32_t want, const fp8attn_error* err, const char* needle) {
  const int status_ok = got == want;
  const int err_ok = err->status == want;
  const size_t len = bounded_length(err->message, sizeof err->message);
  const int terminated = len < sizeof err->message;
  const int message_ok = terminated && len > 0 && strstr(err->message, needle) != NULL;
  abi_check(status_ok, what, "returned %s (%d), expected %s (%d)", fp8attn_status_name(got), (int)got,
            fp8attn_status_name(want), (int)want);
  abi_check(err_ok, what, "err.status is %d, expected %d", (int)err->status, (int)want);
  abi_check(message_ok, what, "err.message \"%.*s\" is empty, unterminated or lacks \"%s\"", (int)len, err->message,
            needle);
  printf("[%s] %-52s %s: %.*s\n", status_ok && err_ok && message_ok ? " ok " : "FAIL", what, fp8attn_status_name(got),
         (int)len, err->message);
}

void abi_poison(void* p, size_t n, unsigned char byte) { memset(p, byte, n); }

int abi_is_poison(const void* p, size_t n, unsigned char byte) {
  const unsigned char* b = (const unsigned char*)p;
  size_t i;
  for (i = 0; i < n; ++i)
    if (b[i] != byte) return 0;
  return 1;
}

int abi_finish(void) {
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 && g_passed > 0 ? 0 : 1;
}

uint64_t abi_seed(uint64_t fallback) {
  const char* env = getenv("FP8ATTN_TEST_SEED");
  const uint64_t seed = env && *env ? (uint64_t)strtoull(env, NULL, 0) : fallback;
  printf("seed = %llu (set FP8ATTN_TEST_SEED to change)\n", (unsigned long long)seed);
  return seed;
}

uint64_t abi_random_u64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

unsigned char abi_random_e4m3(uint64_t* state) {
  const uint64_t r = abi_random_u64(state);
  const unsigned sign = (unsigned)(r & 1u);
  const unsigned exponent = (unsigned)((r >> 8) % 9u); /* 0..8: |x| < 2^2 */
  const unsigned mantissa = (unsigned)((r >> 16) & 7u);
  return (unsigned char)((sign << 7) | (exponent << 3) | mantissa);
}

float abi_e4m3_to_float(unsigned char byte) {
  const int sign = byte >> 7;
  const int exponent = (byte >> 3) & 15;
  const int mantissa = byte & 7;
  float magnitude;
  if (exponent == 15 && mantissa == 7) return NAN;
  if (exponent == 0)
    magnitude = ldexpf((float)mantissa, -9);
  else
    magnitude = ldexpf(1.0f + (float)mantissa / 8.0f, exponent - 7);
  return sign ? -magnitude : magnitude;
}
