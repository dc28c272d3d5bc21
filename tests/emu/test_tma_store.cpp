// Emulated TMA tiled stores (PTX ISA 9.0 §9.7.9.25.5.1): a box read from (swizzled) shared memory
// lands in global memory; elements outside the tensor are not written; negative coordinates
// are refused.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/arch/barrier.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/tma.hpp"
#include "tests/emu/isa_swizzle_tables.hpp"

namespace fp8attn::test {
namespace {

struct StoreArgs {
  arch::TensorMap map;
  int32_t c0, c1;
  const uint8_t* box_image;  // the logical box, row-major, written to smem with the map's swizzle
  uint32_t box_bytes;
};

void store_kernel(StoreArgs a) {
  unsigned char* box = arch::dynamic_smem();
  const arch::Swizzle s = a.map.spec.swizzle;
  for (uint32_t i = arch::thread_rank(); i < a.box_bytes; i += arch::block_dim().x)
    arch::smem_store(box + test::isa_swizzle_address(i, s), a.box_image[i]);
  arch::fence_proxy_async_shared_cta();
  arch::syncthreads();
  if (arch::thread_rank() == 0) {
    arch::tma_store<2>(a.map, box, {a.c0, a.c1});
    arch::tma_store_commit_group();
    arch::tma_store_wait_read<0>();
  }
}

TEST(TmaStore, WritesOnlyTheInBoundsPartOfABox) {
  const uint64_t seed = 21;
  std::mt19937_64 rng(seed);
  // 40 x 20 BF16 tensor in rows of 96 bytes (16 bytes of padding that must stay untouched).
  const uint32_t cols = 40, rows = 20, pitch = 96;
  std::vector<uint8_t> global(pitch * rows, 0xEE);  // poisoned
  arch::TensorMapSpec spec;
  spec.data_type = arch::TmaDataType::BFloat16;
  spec.rank = 2;
  spec.global_address = global.data();
  spec.global_dims[0] = cols;
  spec.global_dims[1] = rows;
  spec.global_strides_bytes[0] = pitch;
  spec.box_dims[0] = 32;  // 64 bytes = 64B swizzle span
  spec.box_dims[1] = 8;
  spec.swizzle = arch::Swizzle::B64;
  std::vector<uint8_t> box(arch::tma_box_bytes(spec));
  for (auto& b : box) b = static_cast<uint8_t>(rng());
  const int32_t c0 = 16, c1 = 15;  // the box hangs over the right and bottom edges
  emu::LaunchConfig config;
  config.block.x = 64;
  config.dynamic_smem_bytes = 1024;
  config.seed = seed;
  config.shuffle = true;
  emu::launch(config, &store_kernel, StoreArgs{arch::make_emulated_tensor_map(spec), c0, c1, box.data(), static_cast<uint32_t>(box.size())});
  int written = 0, mismatches = 0;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t byte = 0; byte < pitch; ++byte) {
      const uint32_t col = byte / 2;
      const bool in_box = col < cols && col >= static_cast<uint32_t>(c0) && col < c0 + 32u && r >= static_cast<uint32_t>(c1) &&
                          r < c1 + 8u;
      const uint8_t expect = in_box ? box[(r - c1) * 64 + (col - c0) * 2 + byte % 2] : 0xEE;
      mismatches += global[r * pitch + byte] != expect;
      written += in_box;
    }
  EXPECT_EQ(mismatches, 0);
  std::printf("store at (%d, %d): %d bytes written in bounds, %d mismatches (seed %llu)\n", c0, c1, written, mismatches,
              static_cast<unsigned long long>(seed));
}

// Reusing the store's source buffer: ordered (no report) after wait_group.read and a barrier; a
// race without the wait, since the copy may still be reading.
struct ReuseArgs {
  arch::TensorMap map;
  bool wait_read;
};

void reuse_kernel(ReuseArgs a) {
  unsigned char* box = arch::dynamic_smem();
  const unsigned t = arch::thread_rank();
  for (uint32_t i = t; i < 256; i += arch::block_dim().x) arch::smem_store(box + i, static_cast<unsigned char>(i + 1));
  arch::fence_proxy_async_shared_cta();
  arch::syncthreads();
  if (t == 0) {
    arch::tma_store<2>(a.map, box, {0, 0});
    arch::tma_store_commit_group();
    if (a.wait_read) arch::tma_store_wait_read<0>();
  }
  arch::syncthreads();
  if (t == 40) arch::smem_store(box + 7, static_cast<unsigned char>(0));  // another warp reuses the buffer
}

TEST(TmaStore, SourceReuseNeedsTheReadWait) {
  std::vector<uint8_t> global(16 * 16, 0);
  arch::TensorMapSpec spec;
  spec.rank = 2;
  spec.global_address = global.data();
  spec.global_dims[0] = 16;
  spec.global_dims[1] = 16;
  spec.global_strides_bytes[0] = 16;
  spec.box_dims[0] = 16;
  spec.box_dims[1] = 16;
  for (bool wait_read : {true, false}) {
    emu::LaunchConfig config;
    config.block.x = 64;
    config.dynamic_smem_bytes = 1024;
    config.seed = 23;
    std::string error;
    try {
      emu::launch(config, &reuse_kernel, ReuseArgs{arch::make_emulated_tensor_map(spec), wait_read});
    } catch (const emu::KernelError& e) {
      error = e.what();
    }
    std::printf("%s wait_group.read: %s\n", wait_read ? "with" : "without", error.empty() ? "no report" : error.c_str());
    if (wait_read)
      EXPECT_EQ(error, "");
    else
      EXPECT_NE(error.find("race"), std::string::npos) << error;
  }
  EXPECT_EQ(global[7], 8) << "the store wrote the buffer's first contents";
}

TEST(TmaStore, RefusesNegativeCoordinates) {
  std::vector<uint8_t> global(64 * 8, 0);
  arch::TensorMapSpec spec;
  spec.rank = 2;
  spec.global_address = global.data();
  spec.global_dims[0] = 64;
  spec.global_dims[1] = 8;
  spec.global_strides_bytes[0] = 64;
  spec.box_dims[0] = 16;
  spec.box_dims[1] = 4;
  std::vector<uint8_t> box(64, 1);
  emu::LaunchConfig config;
  config.block.x = 32;
  config.dynamic_smem_bytes = 1024;
  try {
    emu::launch(config, &store_kernel, StoreArgs{arch::make_emulated_tensor_map(spec), -16, 0, box.data(), 64u});
    ADD_FAILURE() << "a store at a negative coordinate must be refused";
  } catch (const emu::KernelError& e) {
    std::printf("report: %s\n", e.what());
    EXPECT_NE(std::string(e.what()).find("non-negative"), std::string::npos);
  }
}

}  // namespace
}  // namespace fp8attn::test
