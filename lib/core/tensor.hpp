// Helpers for the ABI's fp8attn_tensor: dtype sizes, names, and the checks every entry point
// makes on a tensor before reading it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fp8attn/fp8attn.h"

namespace fp8attn {

/// Bytes per element; throws BAD_DTYPE for an unknown dtype.
size_t dtype_size(int32_t dtype, std::string_view what);

/// "E4M3", "BF16", ...; "unknown(<n>)" for other values.
std::string dtype_name(int32_t dtype);

/// True when `t` is a well-formed struct (struct_size, rank) with an extent of 0: a tensor with
/// no element, whose data pointer may be NULL.
bool describes_no_element(const fp8attn_tensor& t);

/// Reads a tensor struct the caller passed by value inside another struct: checks struct_size,
/// next, device, rank, dtype, extents ≥ 0, strides ≥ 0 and a reach that fits in int64.
/// Returns false (absent) when data is NULL and the tensor is optional. A required tensor with NULL
/// data is accepted when it has an extent of 0 (NULL_POINTER otherwise). Throws Error naming `what`.
struct TensorCheck {
  int32_t rank = 0;          ///< required rank (0 = any of 1..8)
  int32_t dtype = 0;         ///< required dtype (0 = any known)
  int32_t device = FP8ATTN_DEVICE_HOST;
  bool optional = false;
};
bool check_tensor(const fp8attn_tensor& t, std::string_view what, const TensorCheck& check);

/// The largest element offset of a tensor, Σ stride·(extent − 1), or −1 when it is empty.
/// BAD_STRIDE when it does not fit in int64 (check_tensor applies it to every tensor).
int64_t tensor_reach(const fp8attn_tensor& t, std::string_view what);

/// Requires that no two elements of output tensor t share an address (BAD_STRIDE otherwise):
/// every entry point checks its outputs with it before any worker writes.
void require_no_overlap(const fp8attn_tensor& t, std::string_view what);

/// Requires t.shape[dim] == extent, with a message naming both.
void require_extent(const fp8attn_tensor& t, std::string_view what, int dim, int64_t extent,
                    std::string_view extent_name);

}  // namespace fp8attn
