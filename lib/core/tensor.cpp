#include "lib/core/tensor.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"

namespace fp8attn {

size_t dtype_size(int32_t dtype, std::string_view what) {
  switch (dtype) {
    case FP8ATTN_DTYPE_F32: return 4;
    case FP8ATTN_DTYPE_F64: return 8;
    case FP8ATTN_DTYPE_BF16: return 2;
    case FP8ATTN_DTYPE_F16: return 2;
    case FP8ATTN_DTYPE_E4M3: return 1;
    case FP8ATTN_DTYPE_E5M2: return 1;
    case FP8ATTN_DTYPE_I32: return 4;
    case FP8ATTN_DTYPE_I64: return 8;
    default: throw Error(FP8ATTN_STATUS_BAD_DTYPE, std::string(what) + ": unknown dtype " + std::to_string(dtype));
  }
}

std::string dtype_name(int32_t dtype) {
  switch (dtype) {
    case FP8ATTN_DTYPE_F32: return "F32";
    case FP8ATTN_DTYPE_F64: return "F64";
    case FP8ATTN_DTYPE_BF16: return "BF16";
    case FP8ATTN_DTYPE_F16: return "F16";
    case FP8ATTN_DTYPE_E4M3: return "E4M3";
    case FP8ATTN_DTYPE_E5M2: return "E5M2";
    case FP8ATTN_DTYPE_I32: return "I32";
    case FP8ATTN_DTYPE_I64: return "I64";
    default: return "unknown(" + std::to_string(dtype) + ")";
  }
}

bool describes_no_element(const fp8attn_tensor& t) {
  if (t.struct_size < sizeof(fp8attn_tensor) || t.rank < 1 || t.rank > FP8ATTN_MAX_RANK) return false;
  for (int i = 0; i < t.rank; ++i)
    if (t.shape[i] == 0) return true;
  return false;
}

bool check_tensor(const fp8attn_tensor& t, std::string_view what_view, const TensorCheck& check) {
  // NOTE: every message is built only on failure (FP8ATTN_REQUIRE): a forward call validates
  // its tensors without touching the heap.
  auto what = [&] { return std::string(what_view); };
  // NOTE: NULL data means "absent" for an optional tensor. A required tensor may have NULL data
  // only when it holds no element (PyTorch exports a zero-element tensor so): nothing is read
  // from or written to it, and it is checked like any other tensor below.
  if (t.data == nullptr) {
    if (check.optional) return false;
    FP8ATTN_REQUIRE(describes_no_element(t), FP8ATTN_STATUS_NULL_POINTER,
                    what() + ".data is NULL (only a tensor with an extent of 0 may have NULL data)");
  }
  FP8ATTN_REQUIRE(t.struct_size >= sizeof(fp8attn_tensor), FP8ATTN_STATUS_BAD_STRUCT_SIZE,
                  what() + ".struct_size is " + std::to_string(t.struct_size) + ", expected at least " +
                      std::to_string(sizeof(fp8attn_tensor)));
  FP8ATTN_REQUIRE(t.next == nullptr, FP8ATTN_STATUS_BAD_EXTENSION, what() + ".next must be NULL");
  dtype_size(t.dtype, what_view);
  FP8ATTN_REQUIRE(check.dtype == 0 || t.dtype == check.dtype, FP8ATTN_STATUS_BAD_DTYPE,
                  what() + " has dtype " + dtype_name(t.dtype) + ", expected " + dtype_name(check.dtype));
  FP8ATTN_REQUIRE(t.device == FP8ATTN_DEVICE_HOST || t.device == FP8ATTN_DEVICE_CUDA, FP8ATTN_STATUS_BAD_DEVICE,
                  what() + ".device is unknown: " + std::to_string(t.device));
  FP8ATTN_REQUIRE(t.device == check.device, FP8ATTN_STATUS_BAD_DEVICE,
                  what() + std::string(" lives on the ") + (t.device == FP8ATTN_DEVICE_HOST ? "host" : "CUDA device") +
                      ", but this backend needs " + (check.device == FP8ATTN_DEVICE_HOST ? "host" : "CUDA device") +
                      " memory");
  FP8ATTN_REQUIRE(t.rank >= 1 && t.rank <= FP8ATTN_MAX_RANK, FP8ATTN_STATUS_BAD_SHAPE,
                  what() + ".rank must be in 1..8, got " + std::to_string(t.rank));
  FP8ATTN_REQUIRE(check.rank == 0 || t.rank == check.rank, FP8ATTN_STATUS_BAD_SHAPE,
                  what() + ".rank is " + std::to_string(t.rank) + ", expected " + std::to_string(check.rank));
  for (int i = 0; i < t.rank; ++i) {
    FP8ATTN_REQUIRE(t.shape[i] >= 0, FP8ATTN_STATUS_BAD_SHAPE,
                    what() + ".shape[" + std::to_string(i) + "] is negative: " + std::to_string(t.shape[i]));
    FP8ATTN_REQUIRE(t.stride[i] >= 0, FP8ATTN_STATUS_BAD_STRIDE,
                    what() + ".stride[" + std::to_string(i) + "] is negative: " + std::to_string(t.stride[i]));
  }
  tensor_reach(t, what_view);
  return true;
}

int64_t tensor_reach(const fp8attn_tensor& t, std::string_view what) {
  const int rank = t.rank < FP8ATTN_MAX_RANK ? t.rank : FP8ATTN_MAX_RANK;
  for (int i = 0; i < rank; ++i)
    if (t.shape[i] == 0) return -1;  // empty: no element is addressed
  int64_t reach = 0;
  for (int i = 0; i < rank; ++i) {
    int64_t step = 0;
    // NOTE: the element offset must fit in int64 before any byte arithmetic: a stride of 2^62
    // with three rows would otherwise wrap onto an address the caller never described.
    if (__builtin_mul_overflow(t.stride[i], t.shape[i] - 1, &step) || __builtin_add_overflow(reach, step, &reach))
      throw Error(FP8ATTN_STATUS_BAD_STRIDE,
                  std::string(what) + ": the largest element offset overflows int64 at dim " + std::to_string(i) +
                      " (extent " + std::to_string(t.shape[i]) + ", stride " + std::to_string(t.stride[i]) + ")");
  }
  return reach;
}

void require_extent(const fp8attn_tensor& t, std::string_view what, int dim, int64_t extent,
                    std::string_view extent_name) {
  FP8ATTN_REQUIRE(t.shape[dim] == extent, FP8ATTN_STATUS_BAD_SHAPE,
                  std::string(what) + ".shape[" + std::to_string(dim) + "] is " + std::to_string(t.shape[dim]) +
                      ", expected " + std::string(extent_name) + " = " + std::to_string(extent));
}

/// Outputs must not overlap themselves: two elements written to one address race between
/// worker threads and make the result depend on the schedule. With the dims of extent > 1
/// sorted by stride, each stride must exceed the largest offset the smaller dims reach. This
/// is sufficient (every layout it accepts is free of overlap) and accepts every permutation of
/// a dense or padded layout.
void require_no_overlap(const fp8attn_tensor& t, std::string_view what) {
  std::array<std::pair<int64_t, int64_t>, FP8ATTN_MAX_RANK> dims{};  // (stride, extent)
  int n = 0;
  const int rank = std::min(t.rank, FP8ATTN_MAX_RANK);  // checked by check_tensor already
  for (int i = 0; i < rank; ++i) {
    if (t.shape[i] == 0) return;  // an empty tensor writes nothing
    if (t.shape[i] <= 1) continue;
    int j = n++;  // insertion sort by stride: at most 8 dims
    for (; j > 0 && dims[j - 1].first > t.stride[i]; --j) dims[j] = dims[j - 1];
    dims[j] = {t.stride[i], t.shape[i]};
  }
  int64_t reach = 0;  // largest offset reachable with the dims seen so far
  for (int i = 0; i < n; ++i) {
    FP8ATTN_REQUIRE(dims[i].first > reach, FP8ATTN_STATUS_BAD_STRIDE,
                    std::string(what) + " has overlapping elements: stride " + std::to_string(dims[i].first) +
                        " does not clear the offsets of the smaller dims (up to " + std::to_string(reach) + ")");
    // NOTE: check_tensor has already refused a reach that overflows; this cannot wrap.
    reach = checked_add(reach, checked_mul(dims[i].first, dims[i].second - 1, "output reach", FP8ATTN_STATUS_BAD_STRIDE),
                        "output reach", FP8ATTN_STATUS_BAD_STRIDE);
  }
}

}  // namespace fp8attn
