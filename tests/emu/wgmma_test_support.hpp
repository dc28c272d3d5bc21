// Helpers of the wgmma tests: shared-memory images laid out by the ISA's canonical layouts
// (evaluated here independently of the emulator's own address code), a one-warpgroup test
// kernel, and a plain CPU reference that adds in the mma_order.hpp order.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "kernels/arch/wgmma.hpp"
#include "kernels/emu/primitives.hpp"
#include "kernels/emu/runtime.hpp"
#include "tests/common/tensor_core_reference.hpp"
#include "tests/emu/isa_swizzle_tables.hpp"
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"

namespace fp8attn::test {

/// Element offset of (r, k) in the canonical layouts of PTX ISA 9.0 §9.7.15.5.1.2.1.3 (the
/// (shape):(stride) table, CuTe's notation), in elements; lbo/sbo in elements as well.
/// T = 16 / element_bytes.
inline size_t canonical_element_offset(bool k_major, arch::Swizzle s, size_t t_elems, size_t r, size_t k, size_t lbo,
                                       size_t sbo) {
  const size_t T = t_elems;
  if (k_major) {
    // ((8,m),(T,2k)) : ((W*T, SBO),(1, LBO or T)), W = 1/2/4/8 for none/32B/64B/128B
    if (s == arch::Swizzle::None) return (r % 8) * T + (r / 8) * sbo + (k % T) + (k / T) * lbo;
    const size_t w = arch::swizzle_span_bytes(s) / 16;
    return (r % 8) * w * T + (r / 8) * sbo + (k % T) + (k / T) * T;
  }
  // ((T,W,m),(8,k)) : ((1,T,SBO or LBO),(W*T, LBO or SBO))
  if (s == arch::Swizzle::None) return (r % T) + (r / T) * sbo + (k % 8) * T + (k / 8) * lbo;
  const size_t w = arch::swizzle_span_bytes(s) / 16;
  return (r % T) + ((r / T) % w) * T + (r / (w * T)) * lbo + (k % 8) * w * T + (k / 8) * sbo;
}

/// One operand tile placed in a shared-memory image: `rows` x `k_total` elements of
/// `element_bytes`, given as raw bit patterns (FP8 bytes or BF16 halves).
struct OperandPlacement {
  bool k_major = true;
  arch::Swizzle swizzle = arch::Swizzle::None;
  uint32_t element_bytes = 1;
  uint32_t start = 0;  // .shared address of the tile (aligned to the swizzle period)
  uint32_t lbo_bytes = 0, sbo_bytes = 0;
  uint32_t rows = 0, k_total = 0;

  size_t byte_offset(size_t r, size_t k) const {
    const size_t e = element_bytes;
    return e * canonical_element_offset(k_major, swizzle, 16 / e, r, k, lbo_bytes / e, sbo_bytes / e);
  }
  uint32_t physical(size_t r, size_t k) const {
    return test::isa_swizzle_address(static_cast<uint32_t>(start + byte_offset(r, k)), swizzle);
  }
  /// Descriptor of the k-block starting at element k0: the unswizzled offset of (0, k0) moves the
  /// start address (how kernels step K; the swizzle acts on the absolute address).
  uint64_t descriptor(size_t k0) const {
    return arch::make_wgmma_descriptor(static_cast<uint32_t>(start + byte_offset(0, k0)), lbo_bytes, sbo_bytes, swizzle);
  }
  /// Writes values[r * k_total + k] (bit patterns) into the image.
  void write(std::vector<uint8_t>& image, const std::vector<uint16_t>& values) const {
    for (size_t r = 0; r < rows; ++r)
      for (size_t k = 0; k < k_total; ++k) {
        const uint32_t a = physical(r, k);
        if (image.size() < a + element_bytes) image.resize(a + element_bytes, 0);
        const uint16_t v = values[r * k_total + k];
        std::memcpy(&image[a], &v, element_bytes);  // little-endian: the low byte for FP8
      }
  }
};

/// Standard strides for a tile of `rows` x `k_total` (bytes), each layout packed densely.
inline OperandPlacement make_placement(bool k_major, arch::Swizzle s, uint32_t e, uint32_t start, uint32_t rows,
                                       uint32_t k_total) {
  OperandPlacement p{k_major, s, e, start, 0, 0, rows, k_total};
  const uint32_t span = arch::swizzle_span_bytes(s);
  if (k_major) {
    if (s == arch::Swizzle::None) {
      p.lbo_bytes = 128;                           // next 16-byte K chunk: the next core matrix
      p.sbo_bytes = 128 * (k_total * e / 16);      // next 8 rows: after all K chunks
    } else {
      p.sbo_bytes = 8 * span;                      // next 8 rows: the next swizzle atom
    }
  } else {
    const uint32_t t = 16 / e;
    if (s == arch::Swizzle::None) {
      p.sbo_bytes = 128;                           // next T rows (16-byte MN chunk)
      p.lbo_bytes = 128 * (rows / t);              // next 8 k
    } else {
      p.lbo_bytes = 8 * span;                      // next atom along MN
      p.sbo_bytes = 8 * span * (rows / (span / e));  // next 8 k
    }
  }
  return p;
}

/// Decodes an element's bit pattern.
inline float decode(emu::MmaInputType t, uint16_t bits) {
  switch (t) {
    case emu::MmaInputType::E4M3: return num::e4m3_to_float(static_cast<uint8_t>(bits));
    case emu::MmaInputType::E5M2: return num::e5m2_to_float(static_cast<uint8_t>(bits));
    case emu::MmaInputType::BF16: return num::bf16_to_float(bits);
  }
  return 0;
}

/// Random finite bit patterns of the type, never all zero: FP8 in (-16, 16), BF16 in (-4, 4).
inline std::vector<uint16_t> random_elements(emu::MmaInputType t, size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> fp8(-16.0f, 16.0f), bf16(-4.0f, 4.0f);
  std::vector<uint16_t> v(count);
  for (auto& x : v) {
    switch (t) {
      case emu::MmaInputType::E4M3: x = num::float_to_e4m3(fp8(rng)); break;
      case emu::MmaInputType::E5M2: x = num::float_to_e5m2(fp8(rng)); break;
      case emu::MmaInputType::BF16: x = num::float_to_bf16(bf16(rng)); break;
    }
  }
  return v;
}

/// The rule's widths for an input type (tests/common/tensor_core_reference.hpp).
inline const TensorCoreWidths& widths_of(emu::MmaInputType t) {
  return t == emu::MmaInputType::BF16 ? kBf16Widths : t == emu::MmaInputType::E5M2 ? kE5m2Widths : kE4m3Widths;
}

/// Plain CPU GEMM over k-blocks of `k_instr`: D[m][n] = D ⊕ each block, one instruction of the
/// tensor core's addition per block (the emulator's default), written out independently of
/// kernels/ptx/mma_order.hpp.
inline std::vector<float> reference_mma(emu::MmaInputType t, const std::vector<uint16_t>& a,
                                        const std::vector<uint16_t>& b, int m_rows, int n_cols, int k_total,
                                        int k_instr, std::vector<float> d, bool first_accumulates) {
  std::vector<float> av(k_instr), bv(k_instr);
  for (int m = 0; m < m_rows; ++m)
    for (int n = 0; n < n_cols; ++n) {
      float acc = first_accumulates ? d[static_cast<size_t>(m) * n_cols + n] : 0.0f;
      for (int k0 = 0; k0 < k_total; k0 += k_instr) {
        for (int k = 0; k < k_instr; ++k) {
          av[k] = decode(t, a[static_cast<size_t>(m) * k_total + k0 + k]);
          bv[k] = decode(t, b[static_cast<size_t>(n) * k_total + k0 + k]);
        }
        acc = reference_tensor_core_instruction(acc, av.data(), bv.data(), k_instr, widths_of(t));
      }
      d[static_cast<size_t>(m) * n_cols + n] = acc;
    }
  return d;
}

}  // namespace fp8attn::test

namespace fp8attn::test {

/// Arguments of mma_test_kernel: one warpgroup issues `k_blocks` mmas into one accumulator,
/// one group, then writes its registers out.
struct MmaKernelArgs {
  const uint8_t* image = nullptr;  // copied to shared memory address 0 first
  uint32_t image_bytes = 0;
  emu::MmaInputType type = emu::MmaInputType::E4M3;
  bool a_k_major = true, b_k_major = true;
  const uint64_t* desc_a = nullptr;  // one per k-block
  const uint64_t* desc_b = nullptr;
  const uint32_t* a_regs = nullptr;  // RS form: [k_block][thread][4]; null: A from shared memory
  int k_blocks = 1;
  bool first_accumulates = false;
  const float* d_in = nullptr;  // [thread][N/2]
  float* d_out = nullptr;       // [thread][N/2]
};

/// `frag`: the RS-form A registers of this k-block; they must live until the covering wait.
template <int N>
void issue_one(const MmaKernelArgs& args, arch::WgmmaAccF32<N>& acc, arch::WgmmaAFragment& frag, int kb, unsigned t,
               bool accumulate) {
  using arch::WgmmaMajor;
  if (args.a_regs != nullptr) {
    std::memcpy(frag.reg, &args.a_regs[(static_cast<size_t>(kb) * arch::kWarpgroupThreads + t) * 4], sizeof frag.reg);
    if (args.type == emu::MmaInputType::E4M3) arch::wgmma_fp8<N>(acc, frag, args.desc_b[kb], accumulate);
    else if (args.type == emu::MmaInputType::E5M2) arch::wgmma_fp8<N, arch::Fp8Format::E5M2>(acc, frag, args.desc_b[kb], accumulate);
    else if (args.b_k_major) arch::wgmma_bf16<N, WgmmaMajor::K>(acc, frag, args.desc_b[kb], accumulate);
    else arch::wgmma_bf16<N, WgmmaMajor::MN>(acc, frag, args.desc_b[kb], accumulate);
    return;
  }
  const uint64_t da = args.desc_a[kb], db = args.desc_b[kb];
  if (args.type == emu::MmaInputType::E4M3) arch::wgmma_fp8<N>(acc, da, db, accumulate);
  else if (args.type == emu::MmaInputType::E5M2) arch::wgmma_fp8<N, arch::Fp8Format::E5M2>(acc, da, db, accumulate);
  else if (args.a_k_major && args.b_k_major) arch::wgmma_bf16<N, WgmmaMajor::K, WgmmaMajor::K>(acc, da, db, accumulate);
  else if (args.a_k_major) arch::wgmma_bf16<N, WgmmaMajor::K, WgmmaMajor::MN>(acc, da, db, accumulate);
  else if (args.b_k_major) arch::wgmma_bf16<N, WgmmaMajor::MN, WgmmaMajor::K>(acc, da, db, accumulate);
  else arch::wgmma_bf16<N, WgmmaMajor::MN, WgmmaMajor::MN>(acc, da, db, accumulate);
}

template <int N>
void mma_test_kernel(MmaKernelArgs args) {
  const unsigned t = emu::this_thread().linear_tid;
  if (t == 0) {
    emu::check_smem_access(emu::dynamic_smem(), args.image_bytes, true);
    std::memcpy(emu::dynamic_smem(), args.image, args.image_bytes);
  }
  emu::barrier_sync(0, 0);
  arch::WgmmaAccF32<N> acc;
  for (int i = 0; i < N / 2; ++i) acc[i] = args.d_in[t * (N / 2) + i];
  std::vector<arch::WgmmaAFragment> frags(static_cast<size_t>(args.k_blocks));  // live until the wait
  arch::wgmma_fence();
  for (int kb = 0; kb < args.k_blocks; ++kb) issue_one<N>(args, acc, frags[kb], kb, t, kb > 0 || args.first_accumulates);
  arch::wgmma_commit_group();
  arch::wgmma_wait_group<0>();
  for (int i = 0; i < N / 2; ++i) args.d_out[t * (N / 2) + i] = acc[i];
}

/// Runs mma_test_kernel<N> on one CTA of 128 threads and returns D as a 64 x N row-major matrix.
/// `model`: the launch's accumulation (empty: the emulator's default, the tensor core's addition).
template <int N>
std::vector<float> run_mma(MmaKernelArgs args, const std::vector<float>& d_in_rowmajor, uint64_t seed, bool shuffle,
                           std::optional<arch::MmaPrecisionModel> model = std::nullopt) {
  std::vector<float> d_in(arch::kWarpgroupThreads * (N / 2)), d_out(d_in.size(), std::nanf(""));  // poisoned
  for (int t = 0; t < arch::kWarpgroupThreads; ++t)
    for (int i = 0; i < N / 2; ++i) {
      const auto c = arch::wgmma_d_coord(t, i);
      d_in[t * (N / 2) + i] = d_in_rowmajor[static_cast<size_t>(c.row) * N + c.col];
    }
  args.d_in = d_in.data();
  args.d_out = d_out.data();
  emu::LaunchConfig config;
  config.block.x = arch::kWarpgroupThreads;
  config.dynamic_smem_bytes = (args.image_bytes + 1023) / 1024 * 1024;
  config.seed = seed;
  config.shuffle = shuffle;
  config.mma_model = model;
  emu::launch(config, &mma_test_kernel<N>, args);
  std::vector<float> d(static_cast<size_t>(64) * N);
  for (int t = 0; t < arch::kWarpgroupThreads; ++t)
    for (int i = 0; i < N / 2; ++i) {
      const auto c = arch::wgmma_d_coord(t, i);
      d[static_cast<size_t>(c.row) * N + c.col] = d_out[t * (N / 2) + i];
    }
  return d;
}

}  // namespace fp8attn::test
