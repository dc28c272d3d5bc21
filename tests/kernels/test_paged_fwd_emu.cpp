// The Hopper forward over a paged KV cache on the SIMT emulator: each case's paged run is bit-equal
// (O and LSE) to the same kernel's run on packed contiguous K and V holding the same keys (which
// the Fp8FwdEmu / Bf16FwdEmu suites hold bit-equal to the CPU engine), on fresh random inputs,
// pages in a random order, NaN codes in unused slots, a table with a row stride and garbage past
// each row's last page, under round-robin and a shuffled schedule. Page sizes 1 and 3 take the gather path, the others TMA
// boxes (docs/kernels.md). Plus: one launch replayed with new lengths and tables (what a captured
// graph does), and the clamp-and-flag of device-side inputs.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/paged_fwd_emu_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::paged_test {
namespace {

/// Key counts 0, 1, page − 1, page, page + 1 and several pages (page − 1 = 0 is left out at 1).
std::vector<int64_t> edge_lengths(int64_t p, int64_t several) {
  std::vector<int64_t> k = {0, 1, p, p + 1, several * p + 2};
  if (p > 1) k.push_back(p - 1);
  return k;
}

/// The paged run equals the contiguous run of the same keys, under every schedule.
void expect_paged_matches_contiguous(const PagedCase& c) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  PagedInputs in = make_paged_inputs(c, rng);
  PagedRun contiguous(c, in, false), paged(c, in, true);
  const sm90::FwdLaunch reference = contiguous.plan();
  contiguous.launch(reference, paged_schedules(seed)[0]);
  const sm90::FwdLaunch launch = paged.plan();
  // The gather path exactly when no box of a multiple of 8 rows divides the page and the sink.
  const bool gather = c.page_size % 8 != 0 || (c.sink_tokens > 0 && c.sink_tokens % 8 != 0);
  EXPECT_EQ(launch.args.paged.box_rows == 0, gather) << c.name;
  for (const emu::LaunchConfig& schedule : paged_schedules(seed)) {
    paged.launch(launch, schedule);
    const int64_t diff = mismatches(contiguous.result, paged.result);
    EXPECT_EQ(diff, 0) << c.name << ": seed " << seed << ", shuffle " << schedule.shuffle;
    EXPECT_EQ(paged.result.faults.page_out_of_range, 0u) << c.name << ": a table entry past a row's pages was read";
    EXPECT_EQ(paged.result.faults.seqused_out_of_range, 0u) << c.name;
    std::printf("%s (page %lld, box rows %d, shuffle %d): %zu outputs, %lld differ\n", c.name,
                static_cast<long long>(c.page_size), launch.args.paged.box_rows, schedule.shuffle ? 1 : 0,
                paged.result.out.size(), static_cast<long long>(diff));
  }
}

/// One case per page size over the edge lengths; q_len 3 per sequence (decode-like, and causal
/// rows that see part of the keys).
PagedCase edge_case(const char* name, int32_t dtype, int head_dim, int64_t page, int64_t several, bool causal) {
  PagedCase c;
  c.name = name;
  c.dtype = dtype;
  c.head_dim = head_dim;
  c.page_size = page;
  c.k_lens = edge_lengths(page, several);
  c.q_lens.assign(c.k_lens.size(), 3);
  c.causal = causal;
  c.bound_extra = 5;
  return c;
}

TEST(PagedFwdEmu, PageSize1GatherE4M3) { expect_paged_matches_contiguous(edge_case("page1", FP8ATTN_DTYPE_E4M3, 128, 1, 70, true)); }
TEST(PagedFwdEmu, PageSize3GatherBf16) { expect_paged_matches_contiguous(edge_case("page3", FP8ATTN_DTYPE_BF16, 64, 3, 50, false)); }
TEST(PagedFwdEmu, PageSize16E4M3) { expect_paged_matches_contiguous(edge_case("page16", FP8ATTN_DTYPE_E4M3, 128, 16, 17, false)); }
TEST(PagedFwdEmu, PageSize64Bf16) { expect_paged_matches_contiguous(edge_case("page64", FP8ATTN_DTYPE_BF16, 128, 64, 4, true)); }
TEST(PagedFwdEmu, PageSize128E4M3HeadDim64) { expect_paged_matches_contiguous(edge_case("page128", FP8ATTN_DTYPE_E4M3, 64, 128, 3, true)); }
TEST(PagedFwdEmu, PageSize816E4M3) { expect_paged_matches_contiguous(edge_case("page816", FP8ATTN_DTYPE_E4M3, 128, 816, 2, false)); }
TEST(PagedFwdEmu, PageSize816Bf16HeadDim256) { expect_paged_matches_contiguous(edge_case("page816-bf16", FP8ATTN_DTYPE_BF16, 256, 816, 1, true)); }

/// GQA 8:1, two sequences that share their first pages (prefix caching), chunked prefill:
/// causal with q_len < seqused_k, so each query row sees a different prefix of the keys.
TEST(PagedFwdEmu, GqaSharedPagesChunkedPrefill) {
  for (const int32_t dtype : {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16}) {
    PagedCase c;
    c.name = dtype == FP8ATTN_DTYPE_BF16 ? "gqa-shared-bf16" : "gqa-shared-e4m3";
    c.dtype = dtype;
    c.head_dim = 64;
    c.heads_q = 8;
    c.heads_kv = 1;
    c.page_size = 16;
    c.k_lens = {300, 213};
    c.q_lens = {70, 29};
    c.causal = true;
    c.shared_pages = 5;
    expect_paged_matches_contiguous(c);
  }
}

/// The tile order's sections (fwd_tile_scheduler.hpp) change which CTA runs a tile and when, not
/// a bit: the same launch with 1 and 3 (batch, head) pairs per section equals the plan's single
/// section (these keys fit the L2 budget), contiguous and paged, under every schedule.
TEST(PagedFwdEmu, TileSectionsKeepTheBits) {
  for (const int32_t dtype : {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16}) {
    PagedCase c;
    c.name = dtype == FP8ATTN_DTYPE_BF16 ? "sections-bf16" : "sections-e4m3";
    c.dtype = dtype;
    c.head_dim = 64;
    c.heads_q = 4;
    c.heads_kv = 2;
    c.page_size = 16;
    c.k_lens = {300, 213};
    c.q_lens = {230, 150};
    const uint64_t seed = workloads::fresh_seed();
    std::mt19937_64 rng(seed);
    PagedInputs in = make_paged_inputs(c, rng);
    for (const bool paged : {false, true}) {
      PagedRun run(c, in, paged), reference(c, in, paged);
      sm90::FwdLaunch launch = run.plan();
      const int32_t pairs = launch.args.batch * launch.args.heads_q;
      EXPECT_EQ(launch.args.tile_group, pairs) << c.name << ": short keys fit one section";
      reference.launch(reference.plan(), paged_schedules(seed)[0]);
      for (const int32_t group : {1, 3}) {
        launch.args.tile_group = group;
        for (const emu::LaunchConfig& schedule : paged_schedules(seed)) {
          run.launch(launch, schedule);
          EXPECT_EQ(mismatches(reference.result, run.result), 0)
              << c.name << (paged ? " paged" : " contiguous") << ", group " << group << ", seed " << seed;
        }
      }
    }
  }
}

/// Sliding windows and sink isolation; sink 4 with pages of 16 forces the gather path (no box of
/// a multiple of 8 rows divides the sink block's end), sink 8 keeps 8-row TMA boxes.
TEST(PagedFwdEmu, WindowsAndSinks) {
  PagedCase c;
  c.dtype = FP8ATTN_DTYPE_E4M3;
  c.head_dim = 128;
  c.heads_q = 4;
  c.heads_kv = 2;
  c.page_size = 16;
  c.k_lens = {500, 37};
  c.q_lens = {40, 9};
  c.causal = true;
  c.window_left = 150;
  c.name = "window";
  expect_paged_matches_contiguous(c);
  c.causal = false;
  c.window_left = -1;
  c.sink_tokens = 4;
  c.name = "sink4-gather";
  expect_paged_matches_contiguous(c);
  c.sink_tokens = 8;
  c.name = "sink8-tma";
  expect_paged_matches_contiguous(c);
}

/// One plan launched twice, as a captured CUDA graph replays it: new seqused_k, block table,
/// cache contents and queries written into the same buffers between the two launches; each
/// launch equals the contiguous run of its own keys.
TEST(PagedFwdEmu, GraphReplayWithNewLengthsAndTables) {
  for (const int64_t page : {int64_t{16}, int64_t{3}}) {
    const uint64_t seed = workloads::fresh_seed();
    std::mt19937_64 rng(seed);
    PagedCase a;
    a.name = "replay";
    a.page_size = page;
    a.q_lens = {5, 5, 5};
    a.k_lens = {40, 7, 100};
    a.causal = true;
    PagedCase b = a;
    b.k_lens = {100, 40, 7};  // the same pages in all, so the same buffer sizes
    PagedInputs in = make_paged_inputs(a, rng), next = make_paged_inputs(b, rng);
    ASSERT_EQ(in.k_cache.size(), next.k_cache.size());
    ASSERT_EQ(in.table.size(), next.table.size());
    PagedRun paged(a, in, true), first(a, in, false), second(b, next, false);
    const sm90::FwdLaunch launch = paged.plan();
    const emu::LaunchConfig schedule = paged_schedules(seed)[1];
    first.launch(first.plan(), schedule);
    second.launch(second.plan(), schedule);
    paged.launch(launch, schedule);
    EXPECT_EQ(mismatches(first.result, paged.result), 0) << "page " << page << ", seed " << seed;
    in.q = next.q, in.k_cache = next.k_cache, in.v_cache = next.v_cache;  // same sizes: same buffers
    in.table = next.table, in.seqused = next.seqused;
    ASSERT_EQ(static_cast<const void*>(in.table.data()), static_cast<const void*>(launch.args.paged.block_table));
    paged.launch(launch, schedule);
    EXPECT_EQ(mismatches(second.result, paged.result), 0) << "replay, page " << page << ", seed " << seed;
    EXPECT_GT(mismatches(first.result, second.result), 0);  // the replay computed something new
  }
}

/// Device-side inputs out of range: block-table entries −1 and num_pages + 7 read page 0, and a
/// seqused_k of −3 or max_seqlen_k + 9 is clamped to 0 or max_seqlen_k; each is flagged, and the
/// output equals the run whose inputs hold the clamped values. On both load paths.
TEST(PagedFwdEmu, OutOfRangeTableAndLengthsAreClampedAndFlagged) {
  for (const int64_t page : {int64_t{16}, int64_t{3}}) {
    const uint64_t seed = workloads::fresh_seed();
    std::mt19937_64 rng(seed);
    PagedCase c;
    c.name = "clamp";
    c.page_size = page;
    c.q_lens = {4, 4, 4};
    c.k_lens = {60, 33, 45};
    PagedInputs in = make_paged_inputs(c, rng);
    PagedRun paged(c, in, true);
    const sm90::FwdLaunch launch = paged.plan();
    const emu::LaunchConfig schedule = paged_schedules(seed)[1];
    paged.launch(launch, schedule);
    const RunResult clean = paged.result;
    EXPECT_EQ(clean.faults.page_out_of_range + clean.faults.seqused_out_of_range, 0u);

    // Table entries out of range: flagged, and page 0 read instead.
    const size_t row1 = static_cast<size_t>(in.table_stride);
    const bool moved = in.table[1] != 0 || in.table[row1 + 2] != 0;  // page 0 is not where they were
    in.table[1] = -1;
    in.table[row1 + 2] = static_cast<int32_t>(in.num_pages + 7);
    paged.launch(launch, schedule);
    const RunResult bad_pages = paged.result;
    EXPECT_EQ(bad_pages.faults.page_out_of_range, 1u) << "page " << page;
    EXPECT_EQ(bad_pages.faults.seqused_out_of_range, 0u);
    in.table[1] = 0;
    in.table[row1 + 2] = 0;
    paged.launch(launch, schedule);
    EXPECT_EQ(paged.result.faults.page_out_of_range, 0u);
    EXPECT_EQ(mismatches(bad_pages, paged.result), 0) << "page " << page << ", seed " << seed;
    if (moved) {
      EXPECT_GT(mismatches(bad_pages, clean), 0);  // the bad entries changed the keys read
    }

    // seqused_k out of [0, max_seqlen_k] (max_seqlen_k = 60): flagged and clamped. Every row of
    // the table gets valid pages up to the bound first (it ended at each sequence's last page).
    for (int32_t& entry : in.table)
      if (entry < 0 || entry >= in.num_pages) entry = static_cast<int32_t>((&entry - in.table.data()) % in.num_pages);
    in.seqused = {-3, 33, 60 + 9};
    paged.launch(launch, schedule);
    const RunResult bad_lengths = paged.result;
    EXPECT_EQ(bad_lengths.faults.seqused_out_of_range, 1u) << "page " << page;
    EXPECT_EQ(bad_lengths.faults.page_out_of_range, 0u);
    in.seqused = {0, 33, 60};
    paged.launch(launch, schedule);
    EXPECT_EQ(paged.result.faults.seqused_out_of_range, 0u);
    EXPECT_EQ(mismatches(bad_lengths, paged.result), 0) << "page " << page << ", seed " << seed;
  }
}

}  // namespace
}  // namespace fp8attn::paged_test
