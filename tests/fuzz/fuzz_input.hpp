// The byte format shared by the fuzz targets and the seed-corpus generator: a flat sequence of
// little-endian fields read in order, zero once the input runs out. The generator writes valid
// calls in this format (make_seed_corpus.cpp), so every seed reaches the library's deep paths.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"

namespace fp8attn::fuzz {

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <class T>
  T take() {
    T v{};
    const size_t n = std::min(sizeof(T), size_ - at_);
    std::memcpy(&v, data_ + at_, n);
    at_ += n;
    return v;
  }
  /// A value in [0, n) (0 when n is 0).
  uint32_t pick(uint32_t n) { return n == 0 ? 0 : take<uint32_t>() % n; }
  /// A float from a palette of ordinary and extreme values, or raw bits.
  float number() {
    static const float palette[] = {0.0f, 1.0f, -1.0f, 0.5f, 448.0f, 1e-3f, 1e30f, 3e38f, 1e-40f, INFINITY, NAN, -2.0f};
    const uint8_t mode = take<uint8_t>();
    if (mode < 200) return static_cast<float>(mode) / 64.0f - 1.5f;
    if (mode < 240) return palette[mode % (sizeof palette / sizeof palette[0])];
    return take<float>();
  }
  /// An extent or stride: mostly small, sometimes near the type's edges.
  int64_t extent(int64_t small_max) {
    const uint8_t mode = take<uint8_t>();
    if (mode < 224) return mode % (small_max + 1);
    static const int64_t edges[] = {0,
                                    1,
                                    int64_t{1} << 24,
                                    int64_t{1} << 30,
                                    int64_t{1} << 31,
                                    int64_t{1} << 40,
                                    int64_t{1} << 62,
                                    INT64_MAX - 128,
                                    INT64_MAX,
                                    -1};
    return edges[mode % (sizeof edges / sizeof edges[0])];
  }
  size_t remaining() const { return size_ - at_; }
  const uint8_t* rest() const { return data_ + at_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

class Writer {
 public:
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  /// Encodes a small number so that Reader::number returns it (v in [-1.5, 2.48], a 1/64 step).
  void small_number(float v) { put(static_cast<uint8_t>(std::lround((v + 1.5f) * 64.0f))); }
  void small_extent(uint8_t v) { put(v); }
  std::vector<uint8_t> bytes;
};

/// The sizes in elements that a tensor with this shape and these strides reaches, or −1 when the
/// largest element offset does not fit in int64 (the library must then refuse it) — computed
/// independently of the library, so that a harness never hands it a descriptor beyond the memory
/// it owns. An offset of exactly INT64_MAX is valid to the library, but its count is not an int64:
/// the result saturates there (far beyond any harness's memory either way).
inline int64_t reach_of(const fp8attn_tensor& t) {
  int64_t reach = 0;
  for (int i = 0; i < t.rank; ++i) {
    if (t.shape[i] == 0) return 0;
    if (t.shape[i] < 0 || t.stride[i] < 0) return 0;  // refused by the library before any access
  }
  for (int i = 0; i < t.rank; ++i) {
    int64_t step = 0;
    if (__builtin_mul_overflow(t.stride[i], t.shape[i] - 1, &step) || __builtin_add_overflow(reach, step, &reach))
      return -1;
  }
  return reach == INT64_MAX ? INT64_MAX : reach + 1;
}

/// stride·extent for dense strides, saturating instead of overflowing (the library must then
/// refuse the tensor for its reach).
inline int64_t next_dense_stride(int64_t stride, int64_t extent) {
  int64_t r = 0;
  if (extent <= 0) return stride;
  return __builtin_mul_overflow(stride, extent, &r) ? INT64_MAX / 2 : r;
}

inline fp8attn_tensor tensor(void* data, int32_t dtype, int32_t rank) {
  fp8attn_tensor t{};
  t.struct_size = sizeof t;
  t.data = data;
  t.dtype = dtype;
  t.device = FP8ATTN_DEVICE_HOST;
  t.rank = rank;
  return t;
}

inline fp8attn_error fresh_error() {
  fp8attn_error e{};
  e.struct_size = sizeof e;
  return e;
}

/// A broken invariant: print it and abort, which libFuzzer reports as a crash with the input.
[[noreturn]] inline void broken(const std::string& what, const fp8attn_error& err) {
  fprintf(stderr, "fuzz invariant broken: %s (status %s: %s)\n", what.c_str(), fp8attn_status_name(err.status),
          err.message);
  abort();
}

/// One CPU context with two workers for the whole fuzzing run.
inline fp8attn_context shared_context() {
  static fp8attn_context ctx = [] {
    fp8attn_context_options o{};
    o.struct_size = sizeof o;
    o.backend = FP8ATTN_BACKEND_CPU;
    o.num_threads = 2;
    o.log_level = FP8ATTN_LOG_OFF;
    fp8attn_context c = nullptr;
    if (fp8attn_context_create(&o, &c, nullptr) != FP8ATTN_OK) abort();
    return c;
  }();
  return ctx;
}

}  // namespace fp8attn::fuzz
