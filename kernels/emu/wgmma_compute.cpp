#include "kernels/emu/wgmma_compute.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"

namespace fp8attn::emu {
namespace {

/// Decoding tables: FP8 decode is a pure function of 8 bits, so a table is exact.
struct Fp8Tables {
  std::array<float, 256> e4m3{}, e5m2{};
  Fp8Tables() {
    for (int b = 0; b < 256; ++b) {
      e4m3[b] = num::e4m3_to_float(static_cast<uint8_t>(b));
      e5m2[b] = num::e5m2_to_float(static_cast<uint8_t>(b));
    }
  }
};

const Fp8Tables& fp8_tables() {
  static const Fp8Tables tables;
  return tables;
}

float decode(MmaInputType t, const uint8_t* p) {
  switch (t) {
    case MmaInputType::E4M3: return fp8_tables().e4m3[*p];
    case MmaInputType::E5M2: return fp8_tables().e5m2[*p];
    case MmaInputType::BF16: return num::bf16_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8)));
  }
  return 0.0f;
}

void require(bool ok, const std::string& rule) {
  if (!ok) throw std::invalid_argument("wgmma.mma_async: " + rule);
}

void validate_descriptor(uint64_t desc, const char* which) {
  const auto f = arch::decode_wgmma_descriptor(desc);
  // NOTE: the hardware's use of a non-zero base offset is undocumented (PTX_FACTS §4), so the
  // emulator refuses it rather than guess; swizzled buffers must start on their pattern period.
  require(f.base_offset == 0, std::string(which) + " descriptor has a non-zero base offset (unsupported)");
}

/// Gathers A as a dense 64 x K row-major float array.
std::vector<float> gather_a(const WgmmaOperation& op, const SmemReader& read_smem, int k_len) {
  std::vector<float> a(static_cast<size_t>(arch::kWgmmaM) * k_len);
  const uint32_t e = mma_input_bytes(op.type_a);
  if (op.a_from_registers) {
    const int values = k_len * arch::kWgmmaM / arch::kWarpgroupThreads;  // 8 (BF16) or 16 (FP8)
    for (int t = 0; t < arch::kWarpgroupThreads; ++t) {
      for (int v = 0; v < values; ++v) {
        const auto c = e == 2 ? arch::wgmma_a_bf16_coord(t, v) : arch::wgmma_a_fp8_coord(t, v);
        const int per_reg = 4 / static_cast<int>(e);
        const uint32_t reg = op.a_registers[t][v / per_reg];
        const int shift = 8 * static_cast<int>(e) * (v % per_reg);
        const uint32_t bits = (reg >> shift) & (e == 2 ? 0xFFFFu : 0xFFu);
        const uint8_t bytes[2] = {static_cast<uint8_t>(bits), static_cast<uint8_t>(bits >> 8)};
        a[static_cast<size_t>(c.row) * k_len + c.col] = decode(op.type_a, bytes);
      }
    }
    return a;
  }
  const auto f = arch::decode_wgmma_descriptor(op.desc_a);
  for (int m = 0; m < arch::kWgmmaM; ++m)
    for (int k = 0; k < k_len; ++k)
      a[static_cast<size_t>(m) * k_len + k] =
          decode(op.type_a, read_smem(wgmma_operand_address(f, op.major_a, e, m, k), e));
  return a;
}

/// Gathers B as a dense N x K row-major float array (B(k, n) at [n][k]).
std::vector<float> gather_b(const WgmmaOperation& op, const SmemReader& read_smem, int k_len) {
  std::vector<float> b(static_cast<size_t>(op.n) * k_len);
  const uint32_t e = mma_input_bytes(op.type_b);
  const auto f = arch::decode_wgmma_descriptor(op.desc_b);
  for (int n = 0; n < op.n; ++n)
    for (int k = 0; k < k_len; ++k)
      b[static_cast<size_t>(n) * k_len + k] = decode(op.type_b, read_smem(wgmma_operand_address(f, op.major_b, e, n, k), e));
  return b;
}

}  // namespace

void validate_wgmma_operation(const WgmmaOperation& op) {
  require(op.n >= 8 && op.n <= 256 && op.n % 8 == 0, "N must be a multiple of 8 in [8, 256], got " + std::to_string(op.n));
  const bool fp8_a = op.type_a != MmaInputType::BF16, fp8_b = op.type_b != MmaInputType::BF16;
  require(fp8_a == fp8_b, "A and B must both be FP8 or both be BF16");
  if (fp8_a) {
    // PTX ISA 9.0 §9.7.15.5.2: the transpose immediates exist only for .f16/.bf16.
    require(op.major_a == OperandMajor::K && op.major_b == OperandMajor::K, "FP8 operands must be K-major");
  }
  // A from registers is K-major by construction: the RS syntax has no imm-trans-a.
  require(!op.a_from_registers || op.major_a == OperandMajor::K, "A from registers must be K-major");
  if (!op.a_from_registers) validate_descriptor(op.desc_a, "A");
  validate_descriptor(op.desc_b, "B");
  for (int t = 0; t < arch::kWarpgroupThreads; ++t)
    require(op.accumulators[t] != nullptr, "thread " + std::to_string(t) + " passed no accumulator");
}

void execute_wgmma(const WgmmaOperation& op, const SmemReader& read_smem, arch::MmaPrecisionModel model) {
  validate_wgmma_operation(op);
  const int k_len = mma_instruction_k(op.type_a);
  const std::vector<float> a = gather_a(op, read_smem, k_len);
  const std::vector<float> b = gather_b(op, read_smem, k_len);
  const arch::MmaRule rule = arch::mma_rule(model, op.type_a, op.type_b);
  for (int t = 0; t < arch::kWarpgroupThreads; ++t) {
    float* d = op.accumulators[t];
    for (int i = 0; i < op.n / 2; ++i) {
      const auto c = arch::wgmma_d_coord(t, i);
      const float* a_row = &a[static_cast<size_t>(c.row) * k_len];
      const float* b_col = &b[static_cast<size_t>(c.col) * k_len];
      d[i] = arch::mma_instruction(op.scale_d ? d[i] : 0.0f, k_len, [&](int k) { return a_row[k]; },
                                   [&](int k) { return b_col[k]; }, rule);
    }
  }
}

}  // namespace fp8attn::emu
