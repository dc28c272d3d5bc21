// The table-driven CRC32C against its standard check value and incremental use.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <vector>

#include "lib/scale/crc32c.hpp"

namespace fp8attn {
namespace {

TEST(Crc32c, StandardCheckValue) {
  const char* check = "123456789";
  const uint32_t crc = crc32c(check, 9);
  std::printf("crc32c(\"123456789\") = 0x%08X (expected 0xE3069283)\n", crc);
  EXPECT_EQ(crc, 0xE3069283u);
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
  // RFC 3720 B.4: 32 bytes of zeros give 0x8A9136AA, 32 bytes of 0xFF give 0x62A8AB43.
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF);
  EXPECT_EQ(crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), 32), 0x62A8AB43u);
}

TEST(Crc32c, IncrementalEqualsWhole) {
  const uint64_t seed = 99;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> data(1000);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  const uint32_t whole = crc32c(data.data(), data.size());
  for (size_t split : {size_t{0}, size_t{1}, size_t{333}, size_t{999}, size_t{1000}})
    EXPECT_EQ(crc32c(data.data() + split, data.size() - split, crc32c(data.data(), split)), whole) << split;
}

}  // namespace
}  // namespace fp8attn
