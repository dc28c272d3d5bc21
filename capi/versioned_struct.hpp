// Reading a caller's extensible struct: every struct passed in starts with `size_t
// struct_size` and `const void* next`. The library reads only the bytes struct_size covers
// (an older caller gets defaults for the fields it does not know), ignores bytes beyond its own
// layout (a newer caller), and requires `next` to be NULL until extensions exist.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>

#include "lib/core/error.hpp"

namespace fp8attn::capi {

/// Returns a full-size copy of *in, with fields past in->struct_size taken from `defaults`.
/// `min_size` is the size of the oldest layout still accepted. `chain_allowed`: the struct takes
/// extensions on `next` (the caller walks them); otherwise `next` must be NULL.
template <class T>
T read_struct(const T* in, const char* name, size_t min_size, const T& defaults, bool chain_allowed = false) {
  FP8ATTN_REQUIRE(in != nullptr, FP8ATTN_STATUS_NULL_POINTER, std::string(name) + " is NULL");
  FP8ATTN_REQUIRE(in->struct_size != 0, FP8ATTN_STATUS_BAD_STRUCT_SIZE,
          std::string(name) + "->struct_size is 0; set it to sizeof(" + name + ")");
  FP8ATTN_REQUIRE(in->struct_size >= min_size, FP8ATTN_STATUS_BAD_STRUCT_SIZE,
          std::string(name) + "->struct_size is " + std::to_string(in->struct_size) + ", smaller than the oldest layout (" +
              std::to_string(min_size) + " bytes)");
  T out = defaults;
  std::memcpy(static_cast<void*>(&out), in, std::min(in->struct_size, sizeof(T)));
  out.struct_size = sizeof(T);
  FP8ATTN_REQUIRE(chain_allowed || out.next == nullptr, FP8ATTN_STATUS_BAD_EXTENSION,
                  std::string(name) + "->next must be NULL");
  return out;
}

/// Size of a struct's layout up to and including `member`: the oldest accepted struct_size.
#define FP8ATTN_LAYOUT_THROUGH(T, member) (offsetof(T, member) + sizeof(((T*)nullptr)->member))

}  // namespace fp8attn::capi
