// Checked size arithmetic for every size, count, offset and workspace computation on a
// caller-supplied number: a product or sum that does not fit throws Error with the
// operands in the message instead of wrapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/core/error.hpp"

namespace fp8attn {

/// a·b for element counts and offsets; BAD_SHAPE (or `status`) when it does not fit in int64.
inline int64_t checked_mul(int64_t a, int64_t b, const char* what, int32_t status = FP8ATTN_STATUS_BAD_SHAPE) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(status,
                std::string(what) + ": " + std::to_string(a) + " · " + std::to_string(b) + " does not fit in 64 bits");
  return r;
}

/// a + b for element counts and offsets; BAD_SHAPE (or `status`) when it does not fit in int64.
inline int64_t checked_add(int64_t a, int64_t b, const char* what, int32_t status = FP8ATTN_STATUS_BAD_SHAPE) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(status,
                std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) + " does not fit in 64 bits");
  return r;
}

/// a·b bytes; OUT_OF_MEMORY when it does not fit in size_t.
inline size_t checked_mul(size_t a, size_t b, const char* what) {
  size_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(FP8ATTN_STATUS_OUT_OF_MEMORY, std::string(what) + ": " + std::to_string(a) + " · " + std::to_string(b) +
                                                  " bytes does not fit in size_t");
  return r;
}

/// a + b bytes; OUT_OF_MEMORY when it does not fit in size_t.
inline size_t checked_add(size_t a, size_t b, const char* what) {
  size_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(FP8ATTN_STATUS_OUT_OF_MEMORY, std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) +
                                                  " bytes does not fit in size_t");
  return r;
}

/// ceil(a / b) for a ≥ 0, b ≥ 1, without forming a + b − 1.
inline int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

/// Throws `status` naming `what` when `value` is above `limit` (the documented extent limits).
inline void require_at_most(int64_t value, int64_t limit, const char* what, int32_t status) {
  if (value > limit)
    throw Error(status,
                std::string(what) + " is " + std::to_string(value) + ", above the limit of " + std::to_string(limit));
}

}  // namespace fp8attn
