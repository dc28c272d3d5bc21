#include "lib/scale/scale_state_blob.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "lib/core/error.hpp"
#include "lib/scale/crc32c.hpp"

namespace fp8attn {
namespace {

constexpr uint8_t kMagic[4] = {'F', '8', 'S', 'S'};
constexpr size_t kPrefixBytes = 16;  // magic, version, total length
constexpr size_t kHeaderBytes = 96;
constexpr size_t kGeometryBytes = 28;
constexpr size_t kCrcBytes = 4;

size_t tensor_bytes(int64_t history_len) { return 12 + 4 * static_cast<size_t>(history_len); }

size_t blob_size_for(int64_t num_layers, int64_t history_len) {
  return kHeaderBytes + static_cast<size_t>(num_layers) * (kGeometryBytes + kNumTensorKinds * tensor_bytes(history_len)) +
         kCrcBytes;
}

/// Appends little-endian fields.
class Writer {
 public:
  explicit Writer(uint8_t* out) : out_(out) {}
  void bytes(const void* p, size_t n) {
    std::memcpy(out_ + at_, p, n);
    at_ += n;
  }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_[at_++] = static_cast<uint8_t>(v >> (8 * i));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_[at_++] = static_cast<uint8_t>(v >> (8 * i));
  }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void f32(float v) { u32(std::bit_cast<uint32_t>(v)); }
  size_t at() const { return at_; }

 private:
  uint8_t* out_;
  size_t at_ = 0;
};

/// Reads little-endian fields; the caller has checked the length first.
class Reader {
 public:
  Reader(const uint8_t* in, size_t at) : in_(in), at_(at) {}
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(in_[at_++]) << (8 * i);
    return v;
  }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(in_[at_++]) << (8 * i);
    return v;
  }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  float f32() { return std::bit_cast<float>(u32()); }

 private:
  const uint8_t* in_;
  size_t at_;
};

uint32_t load_u32(const uint8_t* p) { return Reader(p, 0).u32(); }

void require_field(bool ok, const std::string& what) {
  require(ok, FP8ATTN_STATUS_NUMERICS, "scale-state blob: " + what);
}

bool finite_nonnegative(float x) { return std::isfinite(x) && x >= 0.0f; }

/// The loader's cross-field checks on a layer's geometry and auto-α: only
/// combinations the state itself can reach are accepted. AutoAlpha::observe counts steps while
/// σ is known, sets done when the count reaches the burn-in, and only then moves α.
void require_auto_alpha_consistent(const LayerGeometry& g, int32_t burn_in_steps) {
  const AutoAlpha& a = g.auto_alpha;
  require_field(g.sigma_max == 0.0f || (g.head_dim >= 1 && g.token_norm_bound > 0.0f),
                "a layer with σ has no head_dim or no B_X");
  require_field(g.sigma_max > 0.0f || (a.steps_seen == 0 && !a.done), "a layer without σ has burn-in steps");
  require_field(a.done || a.alpha == 1.0f, "α moved before the burn-in ended");
  if (burn_in_steps < 0) {
    require_field(a.steps_seen == 0 && !a.done, "auto-α is off but has burn-in steps");
    return;
  }
  const int32_t last = burn_in_steps > 1 ? burn_in_steps : 1;  // observe counts at least one step
  require_field(a.done ? a.steps_seen >= burn_in_steps && a.steps_seen <= last : a.steps_seen < burn_in_steps,
                "steps_seen = " + std::to_string(a.steps_seen) + " disagrees with done = " +
                    std::to_string(a.done ? 1 : 0) + " and burn_in_steps = " + std::to_string(burn_in_steps));
}

}  // namespace

size_t scale_state_blob_size(const ScaleStateData& data) {
  return blob_size_for(data.config.num_layers, data.config.amax_history_len);
}

void write_scale_state_blob(const ScaleStateData& data, uint8_t* out) {
  const ScaleStateConfig& c = data.config;
  const size_t total = scale_state_blob_size(data);
  Writer w(out);
  w.bytes(kMagic, 4);
  w.u32(kScaleStateBlobVersion);
  w.u64(total);
  w.u32(static_cast<uint32_t>(c.num_layers));
  w.u32(kNumTensorKinds);
  w.u32(static_cast<uint32_t>(c.amax_history_len));
  w.u32(static_cast<uint32_t>(c.amax_algo));
  w.f32(c.margin);
  w.i32(c.burn_in_steps);
  w.f32(c.token_norm_bound);
  w.f32(c.alpha_margin);
  w.f32(c.alpha_decay);
  w.i32(c.grad_dtype);
  for (int32_t r : c.recipe) w.i32(r);
  w.u64(data.step_count);
  for (const LayerScales& layer : data.layers) {
    const LayerGeometry& g = layer.geometry;
    w.f32(g.sigma_max);
    w.i32(g.head_dim);
    w.f32(g.token_norm_bound);
    w.f32(g.auto_alpha.alpha);
    w.f32(g.auto_alpha.rho_max);
    w.i32(g.auto_alpha.steps_seen);
    w.u32(g.auto_alpha.done ? 1u : 0u);
    for (const TensorScaleState& t : layer.tensors) {
      w.f32(t.scale);
      w.f32(t.scale_inv);
      w.u32(static_cast<uint32_t>(t.history.position()));
      for (float v : t.history.values()) w.f32(v);
    }
  }
  w.u32(crc32c(out, w.at()));
}

ScaleStateData read_scale_state_blob(const uint8_t* blob, size_t len) {
  require(len >= kPrefixBytes, FP8ATTN_STATUS_TRUNCATED_BLOB,
          "scale-state blob of " + std::to_string(len) + " bytes is shorter than its " + std::to_string(kPrefixBytes) +
              "-byte prefix");
  require(std::memcmp(blob, kMagic, 4) == 0, FP8ATTN_STATUS_BAD_BLOB_VERSION,
          "not a scale-state blob: the magic is not \"F8SS\"");
  const uint32_t version = load_u32(blob + 4);
  require(version == kScaleStateBlobVersion, FP8ATTN_STATUS_BAD_BLOB_VERSION,
          "scale-state blob version " + std::to_string(version) + " is not supported (this library reads version " +
              std::to_string(kScaleStateBlobVersion) + ")");
  const uint64_t declared = Reader(blob, 8).u64();
  require(len >= declared, FP8ATTN_STATUS_TRUNCATED_BLOB,
          "scale-state blob is truncated: " + std::to_string(len) + " bytes, its header says " + std::to_string(declared));
  // A declared length too short to hold a checksum can only come from corruption.
  require(declared >= kHeaderBytes + kCrcBytes, FP8ATTN_STATUS_CHECKSUM_MISMATCH,
          "scale-state blob is corrupt: declared length " + std::to_string(declared) + " cannot hold a header and CRC");
  const size_t body = static_cast<size_t>(declared) - kCrcBytes;
  const uint32_t stored = load_u32(blob + body);
  const uint32_t computed = crc32c(blob, body);
  require(stored == computed, FP8ATTN_STATUS_CHECKSUM_MISMATCH,
          "scale-state blob failed its CRC32C check (stored " + std::to_string(stored) + ", computed " +
              std::to_string(computed) + ")");
  require_field(len == declared, std::to_string(len - declared) + " trailing bytes after the checksum");

  Reader r(blob, kPrefixBytes);
  ScaleStateConfig c;
  c.num_layers = static_cast<int32_t>(r.u32());
  const uint32_t kinds = r.u32();
  require(kinds == kNumTensorKinds, FP8ATTN_STATUS_BAD_BLOB_VERSION,
          "scale-state blob has " + std::to_string(kinds) + " tensor kinds; this library knows " +
              std::to_string(kNumTensorKinds));
  c.amax_history_len = static_cast<int32_t>(r.u32());
  c.amax_algo = static_cast<int32_t>(r.u32());
  c.margin = r.f32();
  c.burn_in_steps = r.i32();
  c.token_norm_bound = r.f32();
  c.alpha_margin = r.f32();
  c.alpha_decay = r.f32();
  c.grad_dtype = r.i32();
  for (int32_t& rec : c.recipe) rec = r.i32();
  check_scale_state_config(c, FP8ATTN_STATUS_NUMERICS);
  require_field(declared == blob_size_for(c.num_layers, c.amax_history_len),
                "its length does not match its layer count and history length");

  ScaleStateData d = ScaleStateData::make(c);
  d.step_count = r.u64();
  for (LayerScales& layer : d.layers) {
    LayerGeometry& g = layer.geometry;
    g.sigma_max = r.f32();
    g.head_dim = r.i32();
    g.token_norm_bound = r.f32();
    g.auto_alpha.alpha = r.f32();
    g.auto_alpha.rho_max = r.f32();
    g.auto_alpha.steps_seen = r.i32();
    const uint32_t done = r.u32();
    require_field(finite_nonnegative(g.sigma_max) && g.head_dim >= 0 && finite_nonnegative(g.token_norm_bound),
                  "a layer's geometry is out of range");
    require_field(std::isfinite(g.auto_alpha.alpha) && g.auto_alpha.alpha > 0.0f && g.auto_alpha.alpha <= 1.0f &&
                      finite_nonnegative(g.auto_alpha.rho_max) && g.auto_alpha.steps_seen >= 0 && done <= 1,
                  "a layer's auto-alpha state is out of range");
    g.auto_alpha.done = done == 1;
    require_auto_alpha_consistent(g, c.burn_in_steps);
    for (TensorScaleState& t : layer.tensors) {
      t.scale = r.f32();
      t.scale_inv = r.f32();
      const uint32_t position = r.u32();
      std::vector<float> values(static_cast<size_t>(c.amax_history_len));
      for (float& v : values) v = r.f32();
      require_field(std::isfinite(t.scale) && t.scale > 0.0f && std::isfinite(t.scale_inv) && t.scale_inv > 0.0f,
                    "a scale is not positive and finite");
      // Every pair the state writes is representable and mutually inverse (to float rounding).
      require_field(representable_pair(t.scale, t.scale_inv) &&
                        std::fabs(static_cast<double>(t.scale) * t.scale_inv - 1.0) <= 1e-5,
                    "a scale and its scale_inv are not normal floats that are each other's inverse");
      require_field(position < static_cast<uint32_t>(c.amax_history_len), "a history position is out of range");
      for (float v : values) require_field(finite_nonnegative(v), "an amax history entry is negative or not finite");
      t.history.restore(std::move(values), static_cast<int32_t>(position));
    }
  }
  return d;
}

}  // namespace fp8attn
