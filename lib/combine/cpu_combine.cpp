#include "lib/combine/cpu_combine.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/sm90/combine/combine_math.hpp"
#include "lib/combine/combine_rows.hpp"

namespace fp8attn::combine {
namespace {

/// Work items per worker: a few, so that a worker slowed by another tenant leaves its share to
/// the others, each a long contiguous run of rows.
constexpr int64_t kItemsPerWorker = 4;

using sm90::combine::CombineParams;

float load_o(const CombineParams& p, int64_t at) {
  return p.partial_out_bf16 ? num::bf16_to_float(static_cast<const uint16_t*>(p.partial_out)[at])
                            : static_cast<const float*>(p.partial_out)[at];
}

void store_o(const CombineParams& p, int64_t at, float value) {
  if (p.out_bf16)
    static_cast<uint16_t*>(p.out)[at] = num::float_to_bf16(value);
  else
    static_cast<float*>(p.out)[at] = value;
}

void reference_row(const CombineParams& p, int64_t t, int64_t h) {
  using namespace sm90::combine;
  double m = -INFINITY;
  bool poison = false;
  for (int32_t part = 0; part < p.num_parts; ++part) {
    const double x = p.partial_lse[partial_lse_offset(p, part, t, h)];
    poison = poison || std::isnan(x) || x == INFINITY;
    m = x > m ? x : m;
  }
  double sum = 0.0;
  if (!poison && m != -INFINITY)
    for (int32_t part = 0; part < p.num_parts; ++part)
      sum += std::exp(static_cast<double>(p.partial_lse[partial_lse_offset(p, part, t, h)]) - m);
  const double lse = poison ? NAN : (m == -INFINITY ? -INFINITY : m + std::log(sum));
  if (p.lse != nullptr) p.lse[lse_offset(p, t, h)] = static_cast<float>(lse);
  for (int64_t e = 0; e < p.head_dim; ++e) {
    double acc = poison ? NAN : 0.0;
    if (!poison && m != -INFINITY)
      for (int32_t part = 0; part < p.num_parts; ++part) {
        const double x = p.partial_lse[partial_lse_offset(p, part, t, h)];
        if (x == -INFINITY) continue;  // an empty part's O is not read
        acc += std::exp(x - lse) * static_cast<double>(load_o(p, partial_out_offset(p, part, t, h, e)));
      }
    store_o(p, out_offset(p, t, h, e), static_cast<float>(acc));
  }
}

template <class Row>
void for_each_row(const CombineParams& p, ThreadPool& pool, Row&& row) {
  const int64_t rows = sm90::combine::row_count(p);
  if (rows == 0) return;
  pool.parallel_for((rows + kRowsPerItem - 1) / kRowsPerItem, [&](int64_t item, int) {
    const int64_t end = (item + 1) * kRowsPerItem < rows ? (item + 1) * kRowsPerItem : rows;
    for (int64_t r = item * kRowsPerItem; r < end; ++r) row(r / p.heads, r % p.heads);
  });
}

/// The largest cache of CPU 0 that Linux describes in sysfs, in bytes; 0 where it says nothing.
/// NOTE: not sysconf(_SC_LEVEL3_CACHE_SIZE): in a virtual machine glibc reads CPUID's figure
/// for the whole host socket (320 MiB on a 2-core Zen 4 guest whose L3 is 32 MiB, as sysfs says).
int64_t sysfs_cache_bytes() {
  int64_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    char path[96];
    std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    std::FILE* f = std::fopen(path, "r");
    if (f == nullptr) continue;
    long long size = 0;
    char unit = 0;
    const int got = std::fscanf(f, "%lld%c", &size, &unit);
    std::fclose(f);
    if (got < 1 || size <= 0) continue;
    const int64_t bytes = got == 2 && unit == 'K' ? size << 10 : got == 2 && unit == 'M' ? size << 20 : size;
    largest = std::max(largest, bytes);
  }
  return largest;
}

}  // namespace

bool combine_streams_out(const CombineParams& p) {
  // NOTE: glibc's memcpy switches to streaming stores at a fraction of the shared cache for the
  // same reason. Read once; 32 MiB where sysfs is absent.
  static const int64_t cache_bytes = [] {
    const int64_t bytes = sysfs_cache_bytes();
    return bytes > 0 ? bytes : int64_t{32} << 20;
  }();
  const int64_t rows = sm90::combine::row_count(p);
  const int64_t elem = p.partial_out_bf16 ? 2 : 4, out_elem = p.out_bf16 ? 2 : 4;
  const int64_t bytes = rows * (p.num_parts * (p.head_dim * elem + 4) + p.head_dim * out_elem + 4);
  return bytes > cache_bytes;
}

void combine_on_cpu(const CombineParams& p, ThreadPool& pool) { combine_on_cpu(p, pool, combine_streams_out(p)); }

void combine_on_cpu(const CombineParams& p, ThreadPool& pool, bool stream_out) {
  const int64_t rows = sm90::combine::row_count(p);
  if (rows == 0) return;
  const CombineRowOps& ops = combine_row_ops();
  // NOTE: each work item is a contiguous run of row blocks, a few per worker: one block per item
  // handed the workers alternate blocks, so each one's reads of a part skipped every other few
  // KiB and the hardware prefetcher kept restarting (and every block took the pool's lock).
  const int64_t blocks = (rows + kRowsPerItem - 1) / kRowsPerItem;
  const int64_t items = std::min<int64_t>(blocks, kItemsPerWorker * static_cast<int64_t>(pool.size()));
  pool.parallel_for(items, [&](int64_t item, int) {
    for (int64_t b = blocks * item / items; b < blocks * (item + 1) / items; ++b) {
      const int64_t r0 = b * kRowsPerItem;
      ops.combine_rows(p, r0, rows - r0 < kRowsPerItem ? rows - r0 : kRowsPerItem, stream_out);
    }
  });
}

void combine_reference(const CombineParams& p, ThreadPool& pool) {
  for_each_row(p, pool, [&](int64_t t, int64_t h) { reference_row(p, t, h); });
}

}  // namespace fp8attn::combine
