#include "kernels/emu/ldmatrix.hpp"

#include <cstring>
#include <sstream>
#include <string>

#include "kernels/emu/cta.hpp"
#include "kernels/emu/runtime.hpp"

namespace fp8attn::emu {
namespace {

struct LaneMatrixOp {
  char* row;
  uint32_t* regs;
};

void check_row(int count, const void* row, bool is_write, const char* what) {
  const ThreadContext& self = this_thread();
  // NOTE: that sm_80+ ignores the addresses of lanes past 8*count is implied by the PTX ISA, not
  // stated (PTX_FACTS.md §9), so every lane must give an aligned shared-memory address; only the
  // rows actually moved count as accesses.
  if (static_cast<int>(self.lane) >= 8 * count) {
    const auto* base = static_cast<const char*>(dynamic_smem());
    const auto* p = static_cast<const char*>(row);
    if (p < base || p + 16 > base + dynamic_smem_size() || reinterpret_cast<uintptr_t>(row) % 16 != 0) {
      std::ostringstream s;
      s << what << ": CTA " << self.linear_cta << " thread " << self.linear_tid
        << " (a lane whose address is unused) gave no aligned shared-memory row address";
      throw KernelError(s.str());
    }
    return;
  }
  if (reinterpret_cast<uintptr_t>(row) % 16 != 0) {
    std::ostringstream s;
    s << what << ": CTA " << self.linear_cta << " thread " << self.linear_tid << " gave a row address that is not 16-byte aligned";
    throw KernelError(s.str());
  }
  check_smem_access(row, 16, is_write);  // bounds and race check, attributed to the giving lane
}

/// Element (r, c) of matrix j: the 16-bit value at row address of lane 8j+r, plus 2c bytes.
uint16_t* element(std::span<void* const> lanes, int j, int r, int c) {
  auto* lane = static_cast<LaneMatrixOp*>(lanes[8 * j + r]);
  return reinterpret_cast<uint16_t*>(lane->row + 2 * c);
}

/// The (row, col) of matrix j that lane l's register j holds in half h.
void fragment_position(bool trans, int l, int h, int& r, int& c) {
  r = l / 4;
  c = 2 * (l % 4) + h;
  if (trans) std::swap(r, c);
}

/// The instruction's wavefronts, when the launch counts them (bank_conflicts.hpp).
void count_wavefronts(std::span<void* const> lanes, int count) {
  Cta& cta = current_cta();
  SmemTrafficRecorder* traffic = cta.traffic();
  if (traffic == nullptr) return;
  uint32_t offsets[32] = {};
  for (int l = 0; l < 8 * count; ++l)
    offsets[l] = static_cast<uint32_t>(reinterpret_cast<std::byte*>(static_cast<LaneMatrixOp*>(lanes[l])->row) - cta.smem());
  traffic->add(this_thread().warp, SmemPath::Matrix, matrix_access_wavefronts(offsets, count));
}

void check_count(int count, const char* what) {
  if (count != 1 && count != 2 && count != 4) throw KernelError(std::string(what) + ": count must be 1, 2 or 4");
}

}  // namespace

void ldmatrix(int count, bool trans, const void* row, uint32_t* regs) {
  check_count(count, "ldmatrix");
  check_row(count, row, false, "ldmatrix");
  LaneMatrixOp mine{const_cast<char*>(static_cast<const char*>(row)), regs};
  collective(Group::Warp, &mine, [count, trans](std::span<void* const> lanes) {
    count_wavefronts(lanes, count);
    for (int l = 0; l < 32; ++l) {
      auto* lane = static_cast<LaneMatrixOp*>(lanes[l]);
      for (int j = 0; j < count; ++j) {
        uint32_t value = 0;
        for (int h = 0; h < 2; ++h) {
          int r, c;
          fragment_position(trans, l, h, r, c);
          uint16_t e;
          std::memcpy(&e, element(lanes, j, r, c), sizeof e);
          value |= static_cast<uint32_t>(e) << (16 * h);
        }
        lane->regs[j] = value;
      }
    }
  });
}

void stmatrix(int count, bool trans, void* row, const uint32_t* regs) {
  check_count(count, "stmatrix");
  check_row(count, row, true, "stmatrix");
  LaneMatrixOp mine{static_cast<char*>(row), const_cast<uint32_t*>(regs)};
  collective(Group::Warp, &mine, [count, trans](std::span<void* const> lanes) {
    count_wavefronts(lanes, count);
    for (int l = 0; l < 32; ++l) {
      const auto* lane = static_cast<LaneMatrixOp*>(lanes[l]);
      for (int j = 0; j < count; ++j)
        for (int h = 0; h < 2; ++h) {
          int r, c;
          fragment_position(trans, l, h, r, c);
          const auto e = static_cast<uint16_t>(lane->regs[j] >> (16 * h));
          std::memcpy(element(lanes, j, r, c), &e, sizeof e);
        }
    }
  });
}

}  // namespace fp8attn::emu
