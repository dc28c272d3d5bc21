// libFuzzer target: plan creation and the attention forward, from fuzzed descriptions, shapes,
// strides, sequence lengths, descales and input bytes. Invariants: a refused call leaves out and
// lse untouched (NUMERICS excepted: it is reported after the outputs are written), a refused plan
// leaves *out untouched, and every successful call's outputs are finite.
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/fuzz/fuzz_input.hpp"

using namespace fp8attn::fuzz;

namespace {

constexpr int64_t kElems = 1 << 16;  // elements in each buffer the harness owns
constexpr int64_t kWorkBudget = int64_t{1} << 18;

fp8attn_attention_desc read_desc(Reader& r) {
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  const uint8_t edits = r.take<uint8_t>();
  if (edits & 1) d.input_dtype = r.pick(2) ? FP8ATTN_DTYPE_BF16 : FP8ATTN_DTYPE_E4M3;
  if (edits & 2) d.output_dtype = r.pick(2) ? FP8ATTN_DTYPE_F32 : FP8ATTN_DTYPE_BF16;
  const int32_t dims[] = {64, 128, 256, 32, 0};
  d.head_dim = dims[r.pick(5)];
  if (d.head_dim == 0) d.head_dim = 64;
  d.num_heads_kv = 1 + static_cast<int32_t>(r.pick(3));
  d.num_heads_q = d.num_heads_kv * (1 + static_cast<int32_t>(r.pick(4)));
  if (edits & 4) d.num_heads_q = static_cast<int32_t>(r.extent(8));
  d.causal = r.pick(2);
  if (edits & 8) {
    d.window_left = static_cast<int32_t>(r.extent(16) - 1);
    d.window_right = static_cast<int32_t>(r.extent(16) - 1);
  }
  if (edits & 16) d.softmax_scale = r.number();
  if (edits & 32) {
    d.kv_order = static_cast<int32_t>(r.pick(3));
    d.p_scale_log2 = static_cast<int32_t>(r.pick(10));
    d.pv_promote_interval = static_cast<int32_t>(r.pick(4));
    d.telemetry = r.pick(2);
  }
  if (edits & 64) {
    d.softmax_variant = static_cast<int32_t>(r.pick(3));
    d.stabilized_beta = r.number();
    d.stabilized_tie_tol = r.number();
    d.stabilized_shift_cap_log2 = r.number();
  }
  if (edits & 128) {
    d.sink_tokens = static_cast<int32_t>(r.extent(64));
    // The decode path: its selector (2 is bad), and split counts across 0..256 and past both ends.
    d.decode = r.pick(3);
    d.num_splits = static_cast<int32_t>(r.extent(300) - 20);  // wraps at the edges, no overflow
    // The accumulation model (2 is bad): FP32 takes the decode path's own FP32 tile.
    d.accumulator_model = r.pick(3);
  }
  return d;
}

/// Shape [batch, seq, heads, dim] (or packed [rows, heads, dim]) with dense or fuzzed strides.
void shape_tensor(Reader& r, fp8attn_tensor& t, const int64_t* shape, bool fuzz_strides) {
  int64_t stride = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    t.shape[i] = shape[i];
    t.stride[i] = stride;
    stride = next_dense_stride(stride, shape[i]);
  }
  if (fuzz_strides)
    for (int i = 0; i < t.rank; ++i)
      if (r.pick(4) == 0) t.stride[i] = r.extent(512);
}

bool fits(const fp8attn_tensor& t, bool* must_refuse) {
  if (t.data == nullptr) return true;
  const int64_t reach = reach_of(t);
  if (reach < 0) *must_refuse = true;
  return reach <= kElems;
}

bool finite_output(const std::vector<uint8_t>& out, int32_t dtype, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (dtype == FP8ATTN_DTYPE_F32) {
      float x;
      std::memcpy(&x, out.data() + 4 * i, 4);
      if (!std::isfinite(x)) return false;
    } else {
      uint16_t x;
      std::memcpy(&x, out.data() + 2 * i, 2);
      if ((x & 0x7F80u) == 0x7F80u) return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r(data, size);
  fp8attn_context ctx = shared_context();
  const fp8attn_attention_desc desc = read_desc(r);
  fp8attn_plan plan = reinterpret_cast<fp8attn_plan>(uintptr_t{0x5151});
  fp8attn_error err = fresh_error();
  if (fp8attn_plan_create(ctx, &desc, &plan, &err) != FP8ATTN_OK) {
    if (plan != reinterpret_cast<fp8attn_plan>(uintptr_t{0x5151})) broken("a refused plan wrote *out", err);
    return 0;
  }
  struct PlanGuard {
    fp8attn_plan p;
    ~PlanGuard() { fp8attn_plan_destroy(p); }
  } guard{plan};
  const int64_t hq = desc.num_heads_q, hkv = desc.num_heads_kv, d = desc.head_dim;
  const bool packed = r.pick(4) == 0, fuzz_strides = r.pick(2) == 0;
  const size_t in_size = desc.input_dtype == FP8ATTN_DTYPE_E4M3 ? 1 : 2;
  const size_t out_size = desc.output_dtype == FP8ATTN_DTYPE_F32 ? 4 : 2;
  std::vector<uint8_t> q(kElems * in_size), k(kElems * in_size), v(kElems * in_size);
  std::vector<uint8_t> out(kElems * out_size, 0xA5), lse(kElems * 4, 0xA5);
  // Input bytes: the rest of the fuzz input, repeated; E4M3 NaN codes included on purpose.
  for (std::vector<uint8_t>* x : {&q, &k, &v})
    for (size_t i = 0; i < x->size(); ++i) (*x)[i] = r.remaining() ? r.rest()[i % r.remaining()] : uint8_t(i * 37);
  if (desc.input_dtype == FP8ATTN_DTYPE_BF16)  // keep BF16 inputs mostly finite and moderate
    for (std::vector<uint8_t>* x : {&q, &k, &v})
      for (size_t i = 1; i < x->size(); i += 2) (*x)[i] &= 0xBF;

  fp8attn_attention_args a{};
  a.struct_size = sizeof a;
  a.q = tensor(q.data(), desc.input_dtype, packed ? 3 : 4);
  a.k = tensor(k.data(), desc.input_dtype, packed ? 3 : 4);
  a.v = tensor(v.data(), desc.input_dtype, packed ? 3 : 4);
  a.out = tensor(out.data(), desc.output_dtype, packed ? 3 : 4);
  std::vector<int32_t> cu_q, cu_k;
  int64_t batch = 1, rows_q = 0, rows_k = 0, max_q = 0, max_k = 0;
  if (packed) {
    batch = 1 + r.pick(6);
    cu_q.assign(batch + 1, 0);
    cu_k.assign(batch + 1, 0);
    for (int64_t b = 1; b <= batch; ++b) {
      const int64_t lq = r.extent(40), lk = r.extent(40);
      cu_q[b] = static_cast<int32_t>(cu_q[b - 1] + (lq & 63) - (r.pick(16) == 0 ? 3 : 0));
      cu_k[b] = static_cast<int32_t>(cu_k[b - 1] + (lk & 63));
      max_q = std::max<int64_t>(max_q, lq & 63);
      max_k = std::max<int64_t>(max_k, lk & 63);
    }
    rows_q = std::max<int32_t>(cu_q[batch], 0);
    rows_k = cu_k[batch];
    if (r.pick(8) == 0) rows_q = r.extent(64);
    const int64_t sq[] = {rows_q, hq, d}, sk[] = {rows_k, hkv, d}, so[] = {rows_q, hq, d};
    shape_tensor(r, a.q, sq, fuzz_strides);
    shape_tensor(r, a.k, sk, fuzz_strides);
    shape_tensor(r, a.v, sk, fuzz_strides);
    shape_tensor(r, a.out, so, fuzz_strides);
    a.cu_seqlens_q = tensor(cu_q.data(), FP8ATTN_DTYPE_I32, 1);
    a.cu_seqlens_q.shape[0] = batch + 1;
    a.cu_seqlens_q.stride[0] = 1;
    a.cu_seqlens_k = tensor(cu_k.data(), FP8ATTN_DTYPE_I32, 1);
    a.cu_seqlens_k.shape[0] = batch + 1;
    a.cu_seqlens_k.stride[0] = 1;
  } else {
    batch = r.extent(4);
    max_q = r.extent(48);
    max_k = r.extent(48);
    const int64_t sq[] = {batch, max_q, hq, d}, sk[] = {batch, max_k, hkv, d};
    shape_tensor(r, a.q, sq, fuzz_strides);
    shape_tensor(r, a.k, sk, fuzz_strides);
    shape_tensor(r, a.v, sk, fuzz_strides);
    shape_tensor(r, a.out, sq, fuzz_strides);
  }
  if (r.pick(3) == 0) {
    a.lse = tensor(lse.data(), FP8ATTN_DTYPE_F32, packed ? 2 : 3);
    if (packed) {
      a.lse.shape[0] = hq, a.lse.shape[1] = rows_q, a.lse.stride[0] = rows_q, a.lse.stride[1] = 1;
    } else {
      a.lse.shape[0] = batch, a.lse.shape[1] = hq, a.lse.shape[2] = max_q;
      a.lse.stride[0] = next_dense_stride(max_q, hq), a.lse.stride[1] = max_q, a.lse.stride[2] = 1;
    }
  }
  float descales[3][16];
  fp8attn_tensor* ds[] = {&a.q_descale, &a.k_descale, &a.v_descale};
  for (int i = 0; i < 3; ++i) {
    if (r.pick(3) != 0) continue;
    for (float& x : descales[i]) x = r.number();
    *ds[i] = tensor(descales[i], FP8ATTN_DTYPE_F32, 2);
    ds[i]->shape[0] = batch, ds[i]->shape[1] = hkv;
    const bool broadcast = r.pick(2) == 0;
    ds[i]->stride[0] = broadcast ? 0 : hkv, ds[i]->stride[1] = broadcast ? 0 : 1;
    if (!broadcast && batch > 16 / hkv) ds[i]->data = nullptr;  // beyond the harness's buffer
  }
  fp8attn_telemetry telemetry{};
  telemetry.struct_size = sizeof telemetry;
  a.telemetry = &telemetry;

  bool must_refuse = false;
  for (const fp8attn_tensor* t : {&a.q, &a.k, &a.v, &a.out, &a.lse})
    if (!fits(*t, &must_refuse)) return 0;  // the harness does not own that memory: not a valid call
  // Extents over the documented limits must be refused before any work; within them, skip
  // calls too slow for a fuzzing iteration (a valid call, not a finding).
  const bool over_limits =
      must_refuse || batch > (int64_t{1} << 24) || max_q > (int64_t{1} << 30) || max_k > (int64_t{1} << 30);
  int64_t work = 0;
  const bool overflow = __builtin_mul_overflow(batch, std::max<int64_t>(max_q, 1), &work) ||
                        __builtin_mul_overflow(work, std::max<int64_t>(max_k, 1), &work) ||
                        __builtin_mul_overflow(work, hq, &work);
  if (!over_limits && (overflow || work > kWorkBudget)) return 0;

  size_t bytes = 0;
  std::vector<uint8_t> workspace;
  if (fp8attn_plan_workspace_size(plan, std::max<int64_t>(batch, 1), 1, 1, &bytes, nullptr) == FP8ATTN_OK)
    workspace.resize(bytes);
  else
    workspace.resize(1 << 16);
  const std::vector<uint8_t> out_before = out, lse_before = lse;
  const int32_t s = fp8attn_attention_forward(plan, &a, workspace.data(), workspace.size(), nullptr, &err);
  if (must_refuse && s == FP8ATTN_OK) broken("a tensor whose reach overflows int64 was accepted", err);
  if (s != FP8ATTN_OK && s != FP8ATTN_STATUS_NUMERICS && (out != out_before || lse != lse_before))
    broken("a refused forward wrote its outputs", err);
  if (s == FP8ATTN_OK && !packed && a.out.stride[3] == 1 && reach_of(a.out) > 0) {
    // Dense-in-dim padded outputs: every addressed element must be finite.
    bool ok = true;
    for (int64_t b = 0; b < batch && ok; ++b)
      for (int64_t i = 0; i < max_q && ok; ++i)
        for (int64_t h = 0; h < hq && ok; ++h) {
          const int64_t at = b * a.out.stride[0] + i * a.out.stride[1] + h * a.out.stride[2];
          std::vector<uint8_t> row(out.begin() + at * out_size, out.begin() + (at + d) * out_size);
          ok = finite_output(row, desc.output_dtype, static_cast<size_t>(d));
        }
    if (!ok) broken("a successful forward returned a non-finite output", err);
  }
  return 0;
}
