// Compile-only coverage of the kernels/arch inline PTX that the GEMM does not use: every wgmma
// shape and operand form (N = 16..256, SS/RS, E4M3/E5M2, BF16 with each transpose), TMA loads and
// stores in 2D-5D, ldmatrix/stmatrix, cvt packs and ex2. tools/check_sm90_build.sh compiles it
// for sm_90a so that ptxas checks each asm string; it is never launched.
#include <cstdint>
#include <utility>

#include "kernels/arch/cvt.hpp"
#include "kernels/arch/ex2.hpp"
#include "kernels/arch/ldmatrix.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/tma.hpp"
#include "kernels/arch/wgmma.hpp"

namespace fp8attn::coverage {

using arch::WgmmaMajor;

// NOTE: scale-d comes from a runtime flag: with a constant false, ptxas drops the mmas before it
// as dead code, and their forms would go unchecked.
template <int N>
__device__ void all_forms(float* out, uint64_t da, uint64_t db, const arch::WgmmaAFragment& a, bool acc_on) {
  arch::WgmmaAccF32<N> acc;
  for (int i = 0; i < N / 2; ++i) acc[i] = out[i];
  arch::wgmma_fence();
  arch::wgmma_fp8<N>(acc, da, db, acc_on);
  arch::wgmma_fp8<N, arch::Fp8Format::E5M2>(acc, da, db, acc_on);
  arch::wgmma_fp8<N>(acc, a, db, acc_on);
  arch::wgmma_fp8<N, arch::Fp8Format::E5M2>(acc, a, db, acc_on);
  arch::wgmma_bf16<N, WgmmaMajor::K, WgmmaMajor::K>(acc, da, db, acc_on);
  arch::wgmma_bf16<N, WgmmaMajor::MN, WgmmaMajor::K>(acc, da, db, acc_on);
  arch::wgmma_bf16<N, WgmmaMajor::K, WgmmaMajor::MN>(acc, da, db, acc_on);
  arch::wgmma_bf16<N, WgmmaMajor::MN, WgmmaMajor::MN>(acc, da, db, acc_on);
  arch::wgmma_bf16<N, WgmmaMajor::K>(acc, a, db, acc_on);
  arch::wgmma_bf16<N, WgmmaMajor::MN>(acc, a, db, acc_on);
  arch::wgmma_commit_group();
  arch::wgmma_wait_group<0>();
  arch::wgmma_fence_operand(acc);
  for (int i = 0; i < N / 2; ++i) out[i] = acc[i];
}

template <int... kGroups>
__device__ void every_n(float* out, uint64_t da, uint64_t db, const arch::WgmmaAFragment& a, bool acc_on,
                        std::integer_sequence<int, kGroups...>) {
  (all_forms<16 * (kGroups + 1)>(out, da, db, a, acc_on), ...);
}

__global__ void wgmma_coverage(float* out, uint64_t da, uint64_t db, uint32_t a0) {
  const arch::WgmmaAFragment a{{a0, a0 + 1, a0 + 2, a0 + 3}};
  every_n(out, da, db, a, a0 != 0, std::make_integer_sequence<int, 16>{});
}

__global__ void data_movement_coverage(const __grid_constant__ arch::TensorMap map, uint32_t* out, float x) {
  unsigned char* smem = arch::dynamic_smem();
  auto* bar = reinterpret_cast<uint64_t*>(smem);
  unsigned char* box = smem + 1024;
  const int32_t c = static_cast<int32_t>(x);
  arch::tma_prefetch_descriptor(map);
  arch::tma_load<2>(box, map, bar, {c, c});
  arch::tma_load<3>(box, map, bar, {c, c, c});
  arch::tma_load<4>(box, map, bar, {c, c, c, c});
  arch::tma_load<5>(box, map, bar, {c, c, c, c, c});
  arch::tma_store<2>(map, box, {c, c});
  arch::tma_store<3>(map, box, {c, c, c});
  arch::tma_store<4>(map, box, {c, c, c, c});
  arch::tma_store<5>(map, box, {c, c, c, c, c});
  arch::tma_store_commit_group();
  arch::tma_store_wait_read<0>();
  uint32_t r1[1], r2[2], r4[4], t1[1], t2[2], t4[4];
  arch::ldmatrix<1>(box, r1);
  arch::ldmatrix<2>(box, r2);
  arch::ldmatrix<4>(box, r4);
  arch::ldmatrix<1, true>(box, t1);
  arch::ldmatrix<2, true>(box, t2);
  arch::ldmatrix<4, true>(box, t4);
  arch::stmatrix<1>(box, r1);
  arch::stmatrix<2>(box, r2);
  arch::stmatrix<4>(box, r4);
  arch::stmatrix<1, true>(box, t1);
  arch::stmatrix<2, true>(box, t2);
  arch::stmatrix<4, true>(box, t4);
  out[0] = r1[0] + r2[1] + r4[3] + t1[0] + t2[1] + t4[3] + arch::cvt_e4m3x2(x, -x) + arch::cvt_e5m2x2(x, 2 * x) + arch::cvt_e4m3x4(x, x, x, x) +
           arch::cvt_bf16x2(x, x) + static_cast<uint32_t>(arch::ex2_approx(x));
}

}  // namespace fp8attn::coverage
