// The host side of a tensor map: the parameter rules of cuTensorMapEncodeTiled (CUDA Driver API;
// PTX_FACTS.md §6c) as this project applies them, one rejected case per rule, and the encodings
// that must not be confused (TMA vs wgmma swizzle codes).
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "kernels/ptx/tma_tensor_map.hpp"
#include "kernels/ptx/wgmma_descriptor.hpp"

namespace fp8attn::test {
namespace {

using arch::Swizzle;
using arch::TensorMapSpec;
using arch::TmaDataType;

alignas(64) unsigned char g_tensor[1 << 16];

TensorMapSpec valid_spec() {
  TensorMapSpec s;
  s.data_type = TmaDataType::BFloat16;
  s.rank = 3;
  s.global_address = g_tensor;
  s.global_dims[0] = 100;   // 200 bytes, padded to a 208-byte row
  s.global_dims[1] = 30;
  s.global_dims[2] = 4;
  s.global_strides_bytes[0] = 208;
  s.global_strides_bytes[1] = 208 * 30;
  s.box_dims[0] = 64;  // 128 bytes = the 128B swizzle span
  s.box_dims[1] = 8;
  s.box_dims[2] = 2;
  s.swizzle = Swizzle::B128;
  return s;
}

TEST(TmaTensorMap, AcceptsAValidMapAndCountsItsBoxBytes) {
  const auto s = valid_spec();
  EXPECT_EQ(arch::validate_tensor_map_spec(s), "");
  EXPECT_EQ(arch::tma_box_bytes(s), 64u * 8u * 2u * 2u);
  EXPECT_NO_THROW(arch::make_emulated_tensor_map(s));
  std::printf("valid map: box of %u bytes\n", arch::tma_box_bytes(s));
}

TEST(TmaTensorMap, RejectsEachBrokenRule) {
  struct Case {
    const char* rule;
    std::function<void(TensorMapSpec&)> breaks;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"rank", [](TensorMapSpec& s) { s.rank = 6; }, "rank"},
      {"data type", [](TensorMapSpec& s) { s.data_type = static_cast<TmaDataType>(13); }, "data type"},
      {"address alignment", [](TensorMapSpec& s) { s.global_address = g_tensor + 8; }, "16-byte aligned"},
      {"global dim zero", [](TensorMapSpec& s) { s.global_dims[1] = 0; }, "global dim 1"},
      {"global dim > 2^32", [](TensorMapSpec& s) { s.global_dims[2] = (uint64_t{1} << 32) + 1; }, "global dim 2"},
      {"stride multiple of 16", [](TensorMapSpec& s) { s.global_strides_bytes[0] = 200; }, "multiple of 16"},
      {"stride below 2^40", [](TensorMapSpec& s) { s.global_strides_bytes[1] = uint64_t{1} << 40; }, "below 2^40"},
      {"strides overlap", [](TensorMapSpec& s) { s.global_strides_bytes[1] = 208 * 29; }, "overlaps"},
      {"box dim > 256", [](TensorMapSpec& s) { s.box_dims[1] = 257; }, "box dim 1"},
      {"box dim zero", [](TensorMapSpec& s) { s.box_dims[2] = 0; }, "box dim 2"},
      {"element stride", [](TensorMapSpec& s) { s.element_strides[1] = 2; }, "element stride"},
      {"inner box multiple of 16 bytes",
       [](TensorMapSpec& s) {
         s.swizzle = Swizzle::None;
         s.box_dims[0] = 12;
       },
       "multiple of 16"},
      {"inner box != swizzle span", [](TensorMapSpec& s) { s.box_dims[0] = 32; }, "swizzle span"},
      {"inner box > swizzle span", [](TensorMapSpec& s) { s.swizzle = Swizzle::B64; }, "swizzle span"},
  };
  for (const auto& c : cases) {
    TensorMapSpec s = valid_spec();
    c.breaks(s);
    const std::string why = arch::validate_tensor_map_spec(s);
    EXPECT_NE(why.find(c.message), std::string::npos) << c.rule << ": got \"" << why << "\"";
    EXPECT_THROW(arch::make_emulated_tensor_map(s), std::invalid_argument) << c.rule;
    std::printf("%-32s -> %s\n", c.rule, why.c_str());
  }
}

TEST(TmaTensorMap, SwizzleCodesDifferBetweenTmaAndWgmma) {
  // CUtensorMapSwizzle: NONE 0, 32B 1, 64B 2, 128B 3. wgmma descriptor: none 0, 128B 1, 64B 2, 32B 3.
  EXPECT_EQ(arch::tma_swizzle_code(Swizzle::B32), 1);
  EXPECT_EQ(arch::tma_swizzle_code(Swizzle::B128), 3);
  EXPECT_EQ(arch::wgmma_layout_code(Swizzle::B32), 3u);
  EXPECT_EQ(arch::wgmma_layout_code(Swizzle::B128), 1u);
  EXPECT_EQ(arch::wgmma_layout_code(Swizzle::B64), 2u);
  EXPECT_EQ(arch::tma_swizzle_code(Swizzle::None), 0);
}

}  // namespace
}  // namespace fp8attn::test
