#include "kernels/emu/tma.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/emu/cta.hpp"
#include "kernels/emu/runtime.hpp"
#include "kernels/emu/swizzle.hpp"

namespace fp8attn::emu {
namespace {

[[noreturn]] void fail(const std::string& what) {
  const ThreadContext& self = this_thread();
  std::ostringstream s;
  s << "cp.async.bulk.tensor: CTA " << self.linear_cta << " thread " << self.linear_tid << ": " << what;
  throw KernelError(s.str());
}

/// Checks the map, the coordinate count and the shared-memory side of a copy; returns the
/// .shared address of the box.
uint32_t check_copy(const void* smem, const arch::TensorMapSpec& map, int rank) {
  if (const std::string why = arch::validate_tensor_map_spec(map); !why.empty()) fail(why);
  if (rank != map.rank) fail("the copy gives " + std::to_string(rank) + " coordinates for a rank-" + std::to_string(map.rank) + " tensor map");
  const auto* base = static_cast<const char*>(dynamic_smem());
  const auto* p = static_cast<const char*>(smem);
  const uint32_t bytes = arch::tma_box_bytes(map);
  if (p < base || static_cast<size_t>(p - base) + bytes > dynamic_smem_size()) {
    std::ostringstream s;
    s << "box of " << bytes << " bytes at shared offset " << (p - base) << " is outside the CTA's " << dynamic_smem_size()
      << " bytes of shared memory";
    fail(s.str());
  }
  const uint32_t address = static_cast<uint32_t>(p - base);
  // NOTE: the PTX ISA asks for 16-byte alignment (§5.5.3.1); the CUDA Programming Guide's 128
  // bytes could not be confirmed (PTX_FACTS.md §6c), so the emulator demands the stricter 128, and
  // the swizzle period (base offset 0) for swizzled boxes.
  const uint32_t align = std::max<uint32_t>(128u, arch::swizzle_period_bytes(map.swizzle));
  if (address % align != 0) fail("shared address " + std::to_string(address) + " is not " + std::to_string(align) + "-byte aligned");
  return address;
}

/// Visits every box element: `visit(smem_address, global_element_pointer_or_null)`, null when the
/// element lies outside the tensor.
template <class Visit>
void for_each_box_element(const arch::TensorMapSpec& map, uint32_t smem_base, const int32_t* coords, Visit visit) {
  const uint32_t e = arch::tma_element_bytes(map.data_type);
  uint32_t index[arch::kTmaMaxRank] = {0, 0, 0, 0, 0};
  const uint32_t total = arch::tma_box_bytes(map) / e;
  for (uint32_t linear = 0; linear < total; ++linear) {
    bool inside = true;
    uint64_t global_offset = 0;
    for (int d = 0; d < map.rank; ++d) {
      const int64_t g = static_cast<int64_t>(coords[d]) + index[d];
      if (g < 0 || g >= static_cast<int64_t>(map.global_dims[d])) inside = false;
      global_offset += static_cast<uint64_t>(g) * (d == 0 ? e : map.global_strides_bytes[d - 1]);
    }
    const uint32_t address = swizzle_address(smem_base + linear * e, map.swizzle);
    visit(address, inside ? static_cast<const char*>(map.global_address) + global_offset : nullptr);
    for (int d = 0; d < map.rank && ++index[d] == map.box_dims[d]; ++d) index[d] = 0;  // dim 0 fastest
  }
}

/// Records the box's shared-memory bytes for the race check. The swizzle permutes 16-byte chunks
/// inside each aligned 128-byte line, so a box of whole lines covers exactly [base, base+bytes).
void record_box(uint32_t smem_base, const arch::TensorMapSpec& map, bool is_write, const void* mbar) {
  auto* base = static_cast<char*>(dynamic_smem());
  const uint32_t bytes = arch::tma_box_bytes(map);
  if (SmemTrafficRecorder* traffic = current_cta().traffic()) {
    // Whole 128-byte lines (bank_conflicts.hpp): the box's bytes at one line per wavefront.
    const uint64_t lines = (bytes + 127) / 128;
    traffic->add(this_thread().warp, SmemPath::AsyncCopy, SmemWavefronts{1, lines, lines});
  }
  if (bytes % 128 == 0 || map.swizzle == arch::Swizzle::None) {
    record_async_smem_access(base + smem_base, bytes, is_write, mbar);
    return;
  }
  std::vector<AsyncSmemRange> chunks;
  for (uint32_t off = 0; off < bytes; off += 16) chunks.push_back({base + swizzle_address(smem_base + off, map.swizzle), 16});
  record_async_smem_accesses(chunks, is_write, mbar);
}

}  // namespace

void tma_load_tile(void* smem_dst, const arch::TensorMapSpec& map, uint64_t* mbar, const int32_t* coords, int rank) {
  const uint32_t smem_base = check_copy(smem_dst, map, rank);
  auto* smem = static_cast<char*>(dynamic_smem());
  if (static_cast<size_t>(smem_base) + arch::tma_box_bytes(map) > dynamic_smem_size()) fail("box outside shared memory");
  const uint32_t e = arch::tma_element_bytes(map.data_type);
  for_each_box_element(map, smem_base, coords, [&](uint32_t address, const char* global) {
    if (global != nullptr)
      std::memcpy(smem + address, global, e);
    else
      std::memset(smem + address, 0, e);
  });
  record_box(smem_base, map, true, mbar);
  mbarrier_complete_tx(mbar, arch::tma_box_bytes(map));
}

void tma_store_tile(const arch::TensorMapSpec& map, const void* smem_src, const int32_t* coords, int rank) {
  const uint32_t smem_base = check_copy(smem_src, map, rank);
  for (int d = 0; d < rank; ++d)
    if (coords[d] < 0) fail("a store's coordinates must be non-negative (PTX ISA 9.0 §9.7.9.25.5.1)");
  const auto* smem = static_cast<const char*>(dynamic_smem());
  const uint32_t e = arch::tma_element_bytes(map.data_type);
  record_box(smem_base, map, false, nullptr);
  for_each_box_element(map, smem_base, coords, [&](uint32_t address, const char* global) {
    if (global != nullptr) std::memcpy(const_cast<char*>(global), smem + address, e);
  });
}

}  // namespace fp8attn::emu
