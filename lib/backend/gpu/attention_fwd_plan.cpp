#include "lib/backend/gpu/attention_fwd_plan.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "kernels/sm90/attention/fwd_tile_scheduler.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "lib/backend/gpu/decode_plan.hpp"
#include "lib/core/error.hpp"

namespace fp8attn::gpu {
namespace {

constexpr size_t kTelemetryBytes = 256;  // FwdTelemetryCounters, padded to a cache line pair
/// The paged launch's FwdPagedFaults, in the same 256 bytes after the counters.
constexpr size_t kPagedFaultsOffset = 128;
static_assert(sizeof(sm90::FwdTelemetryCounters) <= kPagedFaultsOffset &&
              kPagedFaultsOffset + sizeof(sm90::FwdPagedFaults) <= kTelemetryBytes);

sm90::DescaleView view(const Descale& d) { return {d.data, d.batch_stride, d.head_stride, 0, d.value}; }
sm90::DescaleView view(const BlockDescale& d) { return {d.data, d.batch_stride, d.head_stride, d.block_stride}; }

/// A 4D tensor map over `dims` (innermost first, stride 1) with the strides of dims 1..3 in
/// elements of `type` (FP8 travels as UInt8, BF16 as BFloat16); throws
/// Error(UNSUPPORTED_ON_BACKEND) for a tensor TMA cannot load. NOTE: the map's strides must nest
/// (each dimension's stride covers the ones below it: cuTensorMapEncodeTiled), which the usual
/// [b, s, h, d] layouts with heads interleaved in a row do.
arch::TensorMapSpec element_map(const char* name, const void* data, arch::TmaDataType type, const uint64_t (&dims)[4],
                                const int64_t (&element_strides)[3], const uint32_t (&box)[4], arch::Swizzle swizzle) {
  // NOTE: the ABI lets an empty tensor (an extent of 0) have a NULL data pointer, and a tensor map
  // needs a non-NULL base. The kernel fetches no row of an empty tensor, so any aligned address
  // stands in for it; it is never dereferenced.
  // Its strides are free too (a dense [2, 0, h, d] has a batch stride of 0): they are set to nest.
  alignas(16) static const unsigned char kEmptyBase[16] = {};
  const bool empty = dims[0] == 0 || dims[1] == 0 || dims[2] == 0 || dims[3] == 0;
  if (data == nullptr && empty) data = kEmptyBase;
  require(reinterpret_cast<uintptr_t>(data) % 16 == 0, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          std::string(name) + ": TMA needs a 16-byte aligned base address");
  const int64_t e = arch::tma_element_bytes(type);
  const int64_t strides[3] = {element_strides[0] * e, element_strides[1] * e, element_strides[2] * e};
  arch::TensorMapSpec s;
  s.data_type = type;
  s.rank = 4;
  s.global_address = data;
  for (int i = 0; i < 4; ++i) s.global_dims[i] = std::max<uint64_t>(dims[i], 1);
  for (int i = 0; i < 3; ++i) {
    // NOTE: TMA strides must be multiples of 16 bytes (cuTensorMapEncodeTiled); a broadcast
    // (stride 0) or odd stride cannot be loaded and is refused rather than copied.
    // A dimension of extent 1 (one head, one packed "batch") is never stepped: its stride is set
    // to what nests over the dimensions below it.
    const uint64_t nested = i == 0 ? s.global_dims[0] * e : s.global_strides_bytes[i - 1] * s.global_dims[i];
    const int64_t bytes =
        empty || s.global_dims[i + 1] == 1 ? static_cast<int64_t>((nested + 15) / 16 * 16) : strides[i];
    require(bytes > 0 && bytes % 16 == 0, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
            std::string(name) + ": TMA needs strides that are positive multiples of 16 bytes; stride " +
                std::to_string(i + 1) + " is " + std::to_string(strides[i]));
    s.global_strides_bytes[i] = static_cast<uint64_t>(bytes);
  }
  for (int i = 0; i < 4; ++i) s.box_dims[i] = box[i];
  s.swizzle = swizzle;
  const std::string why = arch::validate_tensor_map_spec(s);
  require(why.empty(), FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, std::string(name) + ": " + why);
  return s;
}

/// V with its keys contiguous (seq stride 1): map {seq, dim, head, batch}, one 32-key box per slab
/// of Vᵀ (fwd_config.hpp), with the 32B swizzle whose span is that box row.
arch::TensorMapSpec vt_tensor_map(const SeqTensor& t, int64_t rows, int64_t heads, int64_t batch, int head_dim) {
  const uint64_t dims[4] = {static_cast<uint64_t>(rows), static_cast<uint64_t>(head_dim), static_cast<uint64_t>(heads),
                            static_cast<uint64_t>(batch)};
  return element_map("v (keys contiguous)", t.data, arch::TmaDataType::UInt8, dims, {t.dim_stride, t.head_stride, t.batch_stride},
                  {32, static_cast<uint32_t>(head_dim), 1, 1}, arch::Swizzle::B32);
}

}  // namespace

/// Rows of a [batch, seq, head, dim] FP8 or BF16 tensor: map {dim, head, seq, batch}, box
/// dim x 1 head x rows; packed tensors have one "batch" (attention_fwd_plan.hpp).
arch::TensorMapSpec attention_tensor_map(const char* name, const SeqTensor& t, arch::TmaDataType type, int64_t rows,
                                         int64_t heads, int64_t batch, int head_dim, uint32_t box_dim, uint32_t box_rows,
                                         arch::Swizzle swizzle, uint32_t box_heads) {
  require(t.dim_stride == 1, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          std::string(name) + ": the Hopper kernel loads rows with TMA and needs a dim stride of 1 (or, for v, a "
              "seq stride of 1), got " + std::to_string(t.dim_stride));
  const uint64_t dims[4] = {static_cast<uint64_t>(head_dim), static_cast<uint64_t>(heads), static_cast<uint64_t>(rows),
                            static_cast<uint64_t>(batch)};
  return element_map(name, t.data, type, dims, {t.head_stride, t.seq_stride, t.batch_stride},
                     {box_dim, box_heads, box_rows, 1}, swizzle);
}

// NOTE: the counters' bytes whether or not the plan asks for telemetry: a call may ask for
// amax_o or name a scale state, which runs the telemetry kernel (it measures max |O| too), and
// the workspace query cannot know that in advance.
size_t attention_fwd_workspace_bytes(const AttentionConfig& c, int64_t batch, int64_t max_seqlen_q,
                                     int64_t max_seqlen_k) {
  return kTelemetryBytes + (c.decode ? decode_partials_bytes(c, batch, max_seqlen_q, max_seqlen_k) : 0);
}

sm90::FwdInput attention_fwd_input(const AttentionConfig& c) {
  return c.fp8() ? sm90::FwdInput::E4M3 : sm90::FwdInput::BF16;
}

void check_attention_fwd_supported(const AttentionConfig& c) {
  // NOTE: the decode path runs the decode kernels (kernels/sm90/decode; decode_plan.cpp).
  if (c.decode) check_decode_supported(c);
  require(c.head_dim == c.head_dim_v, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM, "head_dim_v must equal head_dim");
  // NOTE: the BF16 kernels have no two-level accumulation (fwd_instances.hpp): a BF16 wgmma keeps
  // 23 fraction bits per instruction (its addends aligned 25 bits below the largest, mma_order.hpp),
  // far more than FP8's 13; the engine would add a second tile, so refuse.
  require(c.fp8() || c.pv_promote_interval == 0, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "pv_promote_interval " + std::to_string(c.pv_promote_interval) +
              " with BF16 inputs: the Hopper BF16 kernel accumulates P·V in FP32 and has no two-level accumulation; "
              "use 0");
  // NOTE: every-N promotion (N > 1) runs at every head dim: at 256, where O and a second O tile
  // would take 256 of a consumer thread's 240 registers, on the head-dim split tile (BlockM 64,
  // two warpgroups per 64 rows, tile_config.hpp; docs/kernels.md, the limits).
}

namespace {

/// Rows per TMA box of a paged cache: gcd(page_size, BlockN, sink_tokens) when it is a multiple
/// of 8 (a swizzled K tile's period of 8 rows, so every box starts on it), else 0 (gather path).
int32_t paged_box_rows(int64_t page_size, int block_n, int64_t sink_tokens) {
  int64_t g = std::gcd(page_size, static_cast<int64_t>(block_n));
  if (sink_tokens > 0) g = std::gcd(g, sink_tokens);
  return g % 8 == 0 ? static_cast<int32_t>(g) : 0;
}

/// K and V of a paged cache: tensor maps {dim, head, token, page} with boxes of box_rows tokens,
/// the table, seqused_k and the gather path's byte strides (fwd_paged_kv.hpp).
void plan_paged_kv(const AttentionConfig& c, const AttentionProblem& p, void* workspace, sm90::FwdLaunch& l,
                   arch::TmaDataType type, uint32_t chunk, arch::Swizzle swizzle) {
  const PagedKv& kv = p.paged;
  const bool bf16 = !c.fp8();
  // NOTE: PER_HEAD scale caches arrive as the problem's K and V descales (apply_paged_descales);
  // PER_TOKEN_HEAD ones are read by the kernel (fwd_kv_token_scales.hpp): on E4M3's every-block
  // forward and decode kernels (promotion_of), and under BF16 Q by the BF16 forward and decode
  // kernels with V's descale whole on P̃ (kv_cache_math.hpp).
  const bool per_token = kv.scale_granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
  require(p.v.dim_stride == 1, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "a paged v_cache with its keys contiguous: the Hopper kernel reads cache rows (dim stride 1)");
  require(workspace != nullptr, FP8ATTN_STATUS_NULL_POINTER,
          "a paged forward on the Hopper kernel needs its workspace (the fault words of the block table)");
  require(kv.num_pages >= 1 || p.max_seqlen_k == 0, FP8ATTN_STATUS_BAD_SHAPE,
          "a paged cache of 0 pages with max_seqlen_k > 0: a clamped block-table entry needs a page to read");
  require(kv.num_pages <= INT32_MAX && kv.page_size <= INT32_MAX && p.max_seqlen_k < (int64_t{1} << 29) &&
              (p.batch - 1) * kv.table_batch_stride + (kv.max_pages_per_seq - 1) * kv.table_page_stride <= INT32_MAX &&
              (p.batch - 1) * kv.seqused_stride <= INT32_MAX,
          FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "a paged cache whose pages, keys or table offsets exceed the kernel's 32-bit indices");
  sm90::FwdPagedKv& a = l.args.paged;
  // NOTE: BF16 Q over an E4M3 cache runs the BF16 kernel; its gather path decodes the codes to
  // BF16 in shared memory (fwd_paged_kv.hpp), since TMA copies bytes and cannot convert.
  const bool e4m3_cache = bf16 && p.k.dtype == FP8ATTN_DTYPE_E4M3;
  a.e4m3_cache = e4m3_cache;
  a.box_rows = e4m3_cache ? 0 : paged_box_rows(kv.page_size, c.tile.block_n, c.sink_tokens);
  // NOTE: the gather path builds the maps too (a box of one row): both runtimes encode them. An
  // E4M3 cache's maps are E4M3's (bytes, a swizzle span per row chunk), never loaded from.
  const uint32_t box_rows = a.box_rows > 0 ? static_cast<uint32_t>(a.box_rows) : 1u;
  const int64_t pages = std::max<int64_t>(kv.num_pages, 1);
  const uint32_t cache_chunk = c.head_dim == 64 ? 64u : 128u;
  const arch::Swizzle cache_swizzle = c.head_dim == 64 ? arch::Swizzle::B64 : arch::Swizzle::B128;
  if (e4m3_cache) {
    l.k = attention_tensor_map("k_cache", p.k, arch::TmaDataType::UInt8, kv.page_size, c.num_heads_kv, pages,
                               c.head_dim, cache_chunk, 1, cache_swizzle);
    l.v = attention_tensor_map("v_cache", p.v, arch::TmaDataType::UInt8, kv.page_size, c.num_heads_kv, pages,
                               c.head_dim, cache_chunk, 1, cache_swizzle);
  } else {
    l.k = attention_tensor_map("k_cache", p.k, type, kv.page_size, c.num_heads_kv, pages, c.head_dim, chunk, box_rows,
                               swizzle);
    l.v = bf16 ? attention_tensor_map("v_cache", p.v, type, kv.page_size, c.num_heads_kv, pages, c.head_dim, chunk,
                                      box_rows, swizzle)
               : attention_tensor_map("v_cache", p.v, type, kv.page_size, c.num_heads_kv, pages, c.head_dim,
                                      c.head_dim, box_rows, arch::Swizzle::None);
  }
  a.block_table = kv.block_table;
  a.table_batch_stride = static_cast<int32_t>(kv.table_batch_stride);
  a.table_page_stride = static_cast<int32_t>(kv.table_page_stride);
  a.seqused_k = kv.seqused_k;
  a.seqused_stride = static_cast<int32_t>(kv.seqused_stride);
  a.page_size = static_cast<int32_t>(kv.page_size);
  a.num_pages = static_cast<int32_t>(kv.num_pages);
  const int64_t e = p.k.dtype == FP8ATTN_DTYPE_BF16 ? 2 : 1;  // the cache's element bytes
  for (const SeqTensor* t : {&p.k, &p.v})
    require(std::max({t->batch_stride, t->seq_stride, t->head_stride}) * e <= INT32_MAX,
            FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
            "a paged cache whose page, token or head stride is 2^31 bytes or more: the kernel's gather counts "
            "bytes in 32 bits");
  a.k_cache = static_cast<const uint8_t*>(p.k.data);
  a.v_cache = static_cast<const uint8_t*>(p.v.data);
  a.k_page_bytes = static_cast<int32_t>(p.k.batch_stride * e);
  a.k_token_bytes = static_cast<int32_t>(p.k.seq_stride * e);
  a.k_head_bytes = static_cast<int32_t>(p.k.head_stride * e);
  a.v_page_bytes = static_cast<int32_t>(p.v.batch_stride * e);
  a.v_token_bytes = static_cast<int32_t>(p.v.seq_stride * e);
  a.v_head_bytes = static_cast<int32_t>(p.v.head_stride * e);
  if (per_token) {
    for (const PagedKv::ScaleCache* t : {&kv.k_scale, &kv.v_scale})
      require(std::max({t->page_stride, t->token_stride, t->head_stride}) <= INT32_MAX,
              FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
              "a per-token scale cache whose page, token or head stride is 2^31 elements or more: the kernel's "
              "descale gather counts in 32 bits");
    a.k_scale = kv.k_scale.data;
    a.v_scale = kv.v_scale.data;
    a.k_scale_page_stride = static_cast<int32_t>(kv.k_scale.page_stride);
    a.k_scale_token_stride = static_cast<int32_t>(kv.k_scale.token_stride);
    a.k_scale_head_stride = static_cast<int32_t>(kv.k_scale.head_stride);
    a.v_scale_page_stride = static_cast<int32_t>(kv.v_scale.page_stride);
    a.v_scale_token_stride = static_cast<int32_t>(kv.v_scale.token_stride);
    a.v_scale_head_stride = static_cast<int32_t>(kv.v_scale.head_stride);
  }
  a.faults = reinterpret_cast<sm90::FwdPagedFaults*>(static_cast<unsigned char*>(workspace) + kPagedFaultsOffset);
  // NOTE: no cu_seqlens_k: sequence b's keys are seqused_k[b], clamped to seqlen_k (the bound).
  l.args.cu_seqlens_k = nullptr;
  l.args.seqlen_k = p.max_seqlen_k;
}

sm90::PvPromotion promotion_of(const AttentionConfig& c, const AttentionProblem& p) {
  // NOTE: a per-block V descale, or a paged cache's per-token ones, imply promotion after every
  // block, as in the engine.
  // BF16 P takes V's per-token descales whole on P̃ instead, with no promotion (kv_cache_math.hpp).
  const bool per_token = p.paged.present && p.paged.scale_granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
  if (p.v_block_descale.present() || (per_token && c.fp8()) || c.pv_promote_interval == 1)
    return sm90::PvPromotion::EveryBlock;
  return c.pv_promote_interval > 1 ? sm90::PvPromotion::EveryN : sm90::PvPromotion::Off;
}

}  // namespace

sm90::FwdLaunch plan_attention_fwd(const AttentionConfig& c, const AttentionProblem& p, void* workspace,
                                   int sm_count) {
  check_attention_fwd_supported(c);
  const bool bf16 = !c.fp8();
  require(!bf16 || !p.v_block_descale.present(), FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "per-block V descales with BF16 inputs: the Hopper BF16 kernel has no per-block P·V promotion");
  sm90::FwdLaunch l;
  l.key = {c.head_dim, promotion_of(c, p), c.telemetry, attention_fwd_input(c)};
  const sm90::FwdKernelShape shape = sm90::fwd_kernel_shape(l.key);
  require(shape.threads > 0, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "no Hopper kernel for head_dim " + std::to_string(c.head_dim) + " with this promotion");
  // NOTE: the engine's tile follows the interval asked for (attention_config.cpp); per-block V
  // descales run the every-block kernel, whose tile is not the every-N one at head_dims 128
  // (BlockN 224, not 128) and 256 (BlockM 128, not the head-dim split's 64), so the two would
  // visit different tiles and blocks: refuse rather than differ from the engine.
  const sm90::AttentionTile kernel_tile = sm90::path_tile(c.head_dim, !bf16, l.key.promotion, c.decode);
  require(kernel_tile.block_m == c.tile.block_m && kernel_tile.block_n == c.tile.block_n,
          FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "per-block (or a paged cache's per-token) V descales with pv_promote_interval " +
              std::to_string(c.pv_promote_interval) +
              " at head_dim " + std::to_string(c.head_dim) +
              ": they promote every block, and the Hopper kernel that does so has a tile of BlockM " +
              std::to_string(kernel_tile.block_m) + " x BlockN " + std::to_string(kernel_tile.block_n) +
              ", not the every-N tile " + std::to_string(c.tile.block_m) + " x " + std::to_string(c.tile.block_n) +
              "; use pv_promote_interval 0 or 1 with per-block V descales");
  const int64_t batch = p.varlen ? 1 : p.batch;
  const int64_t rows_q = p.varlen ? p.total_q : p.padded_seqlen_q;
  const int64_t rows_k = p.varlen ? p.total_k : p.padded_seqlen_k;
  // Rows of one swizzle span (FwdConfig): 64 B for E4M3 at head_dim 64, else 128 B chunks.
  const arch::TmaDataType type = bf16 ? arch::TmaDataType::BFloat16 : arch::TmaDataType::UInt8;
  const uint32_t row_bytes = static_cast<uint32_t>(c.head_dim) * (bf16 ? 2u : 1u);
  const uint32_t chunk_bytes = row_bytes == 64 ? 64 : 128;
  const uint32_t chunk = chunk_bytes / (bf16 ? 2u : 1u);  // elements
  const arch::Swizzle swizzle = chunk_bytes == 64 ? arch::Swizzle::B64 : arch::Swizzle::B128;
  l.q = attention_tensor_map("q", p.q, type, rows_q, c.num_heads_q, batch, c.head_dim, chunk, c.tile.block_m, swizzle);
  // NOTE: a paged cache's K and V maps are plan_paged_kv's (below).
  const bool paged = p.paged.present;
  // NOTE: FP8 wgmma takes V's transpose; V given with its keys contiguous is loaded as it is,
  // other V is loaded by rows and transposed in shared memory by the producer warpgroup. BF16
  // wgmma reads V N-major as loaded, in K's chunks (fwd_config.hpp).
  const bool v_transposed = !paged && p.v.seq_stride == 1 && p.v.dim_stride != 1;
  require(!bf16 || !v_transposed, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "v with its keys contiguous and BF16 inputs: the Hopper BF16 kernel loads V rows (dim stride 1)");
  if (!paged) {
    l.k = attention_tensor_map("k", p.k, type, rows_k, c.num_heads_kv, batch, c.head_dim, chunk, c.tile.block_n, swizzle);
    if (bf16)
      l.v = attention_tensor_map("v", p.v, type, rows_k, c.num_heads_kv, batch, c.head_dim, chunk, c.tile.block_n,
                                 swizzle);
    else
      l.v = v_transposed ? vt_tensor_map(p.v, rows_k, c.num_heads_kv, batch, c.head_dim)
                         : attention_tensor_map("v", p.v, type, rows_k, c.num_heads_kv, batch, c.head_dim, c.head_dim,
                                                c.tile.block_n, arch::Swizzle::None);
  }

  sm90::FwdArguments& a = l.args;
  a.out = p.out.data;
  a.out_type = p.out.dtype == FP8ATTN_DTYPE_F32    ? sm90::FwdOutput::F32
               : p.out.dtype == FP8ATTN_DTYPE_E4M3 ? sm90::FwdOutput::E4M3
                                                   : sm90::FwdOutput::BF16;
  a.out_scale = p.out_scale;
  copy_strides(p.out, a.out_batch_stride, a.out_seq_stride, a.out_head_stride);
  a.out_dim_stride = p.out.dim_stride;
  // NOTE: a BF16 O of fixed-length sequences goes out through TMA stores where the kernel has a
  // stage for it (FwdConfig::kTmaOut): the map's seq extent clips each tile's rows at the
  // sequence's end. Packed (varlen) sequences follow each other in the tensor, so a clipped box
  // would spill into the next one, and F32 and E4M3 outputs have no stage: those store from
  // registers, as does an output TMA cannot write (a stride or base off 16 bytes).
  if (shape.tma_out && !c.decode && !p.varlen && p.out.dtype == FP8ATTN_DTYPE_BF16 && p.out.dim_stride == 1) {
    try {
      l.o = attention_tensor_map("out", p.out, arch::TmaDataType::BFloat16, p.padded_seqlen_q, c.num_heads_q, p.batch,
                                 c.head_dim_v, 64, 64, arch::Swizzle::B128);
      a.tma_out = true;
    } catch (const Error&) {
      a.tma_out = false;
    }
  }
  copy_sequence_args(c, p, a);
  if (paged) plan_paged_kv(c, p, workspace, l, type, chunk, swizzle);
  a.m_blocks = static_cast<int32_t>((p.max_seqlen_q + c.tile.block_m - 1) / c.tile.block_m);
  const int64_t num_tiles = static_cast<int64_t>(a.m_blocks) * a.heads_q * a.batch;
  require(num_tiles <= INT32_MAX, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "more than 2^31 - 1 query tiles (" + std::to_string(num_tiles) +
              "): the Hopper kernel's tile scheduler counts in 32 bits");
  a.num_tiles = static_cast<int32_t>(num_tiles);
  a.tile_group = sm90::fwd_tile_group(a.batch, a.heads_q, a.heads_kv, p.max_seqlen_k,
                                      static_cast<int64_t>(c.head_dim + c.head_dim_v) * (bf16 ? 2 : 1), c.causal);
  a.q_descale = view(p.q_descale);
  a.k_descale = view(p.k_descale);
  a.v_descale = view(p.v_descale);
  a.q_block_descale = view(p.q_block_descale);
  a.k_block_descale = view(p.k_block_descale);
  a.v_block_descale = view(p.v_block_descale);
  a.softmax_scale = c.softmax_scale;
  a.p_scale_log2 = static_cast<float>(c.p_scale_log2);
  a.causal = c.causal;
  // NOTE: the producer walks keys in 32 bits (fwd_tile<int32_t>): below 2^29 rows the mask's
  // diagonal ± a window clamped to Sq + Sk (the same mask: such a window already reaches past
  // every key) stays inside int32.
  require(rows_q < (int64_t{1} << 29) && rows_k < (int64_t{1} << 29), FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "sequence tensors of 2^29 rows or more: the Hopper kernel's tile scheduler counts keys in 32 bits");
  const int64_t reach = rows_q + (paged ? p.max_seqlen_k : rows_k);
  a.window_left = c.window_left < 0 ? c.window_left : std::min<int64_t>(c.window_left, reach);
  a.window_right = c.window_right < 0 ? c.window_right : std::min<int64_t>(c.window_right, reach);
  a.sink_tokens = c.sink_tokens;
  a.reverse_kv = c.kv_order == FP8ATTN_KV_ORDER_REVERSE;
  a.v_transposed = v_transposed;
  a.promote_interval = c.pv_promote_interval;
  a.stabilized = c.softmax_variant == FP8ATTN_SOFTMAX_STABILIZED;
  a.stabilized_beta = c.stabilized_beta;
  a.stabilized_tie_tol = c.stabilized_tie_tol;
  a.stabilized_shift_cap_log2 = c.stabilized_shift_cap_log2;
  a.telemetry = c.telemetry ? static_cast<sm90::FwdTelemetryCounters*>(workspace) : nullptr;

  l.threads = shape.threads;
  l.smem_bytes = shape.smem_bytes;
  l.grid = static_cast<unsigned>(std::clamp<int64_t>(a.num_tiles, 1, std::max(sm_count, 1)));
  // NOTE: only the emulator reads this; on a GPU the tensor core adds as it does, whatever
  // desc.accumulator_model says.
  l.mma_model = c.mma_model;
  // NOTE: the decode path's partials follow the telemetry words in the workspace.
  if (c.decode) plan_decode(c, p, static_cast<unsigned char*>(workspace) + kTelemetryBytes, sm_count, l);
  return l;
}

}  // namespace fp8attn::gpu
