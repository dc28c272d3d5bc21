// `fp8attn spectral MODEL.safetensors [options]`: per layer, σ_h = ‖W_Q,hᵀ·W_K,g‖₂ of every
// query head through fp8attn_qk_spectral_norms(), the logit bound L = σ_max·B_X²/√d_h and the
// FP8 logit scale 448/L; optionally the RoPE safe bound and exact maximum over offsets.
#include "tools/fp8attn/spectral_command.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/float8.hpp"
#include "tools/fp8attn/safetensors_file.hpp"

namespace {

using fp8attn::tools::SafetensorsEntry;
using fp8attn::tools::SafetensorsFile;

constexpr const char* kUsage = R"(usage: fp8attn spectral MODEL.safetensors [options]

Spectral norms of the per-head QK interaction matrices W_Q,h^T W_K,g of every attention layer,
with the geometry-aware logit bound and FP8 logit scale of each layer.

options:
  --heads N            query heads (default: num_attention_heads of config.json beside the model)
  --kv-heads N         key/value heads (default: num_key_value_heads, else --heads)
  --head-dim D         head dimension (default: head_dim, else hidden_size / heads)
  --q-name PATTERN     W_Q tensor name with {} for the layer index (default: detected; BERT
                       "encoder.layer.{}.attention.self.query.weight" or Llama
                       "model.layers.{}.self_attn.q_proj.weight")
  --k-name PATTERN     W_K tensor name, likewise
  --dtype f32|e4m3     run on the stored weights (f32: F32/BF16/F8_E4M3 as stored), or quantize
                       F32/BF16 weights to E4M3 with a per-tensor scale first (default f32)
  --token-bound B      B_X, the bound on token norms (default sqrt(d_model))
  --rope-max-offset N  also report the RoPE safe bound and the exact maximum over offsets 0..N
  --rope-base B        RoPE frequency base (default 10000)
  --csv                one line per head: layer,head,sigma,iterations,residual[,rope_safe,rope_exact]
  --threads N          CPU threads (default: all cores)
)";

struct Options {
  std::string model;
  std::optional<int> heads, kv_heads, head_dim;
  std::string q_name, k_name;
  bool quantize_e4m3 = false;
  double token_bound = 0.0;
  int64_t rope_max_offset = -1;
  double rope_base = 10000.0;
  bool csv = false;
  int threads = 0;
};

std::string layer_name(const std::string& pattern, int layer) {
  const auto at = pattern.find("{}");
  if (at == std::string::npos) throw std::runtime_error("tensor name pattern needs {}: " + pattern);
  return pattern.substr(0, at) + std::to_string(layer) + pattern.substr(at + 2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--heads") o.heads = std::stoi(value());
    else if (a == "--kv-heads") o.kv_heads = std::stoi(value());
    else if (a == "--head-dim") o.head_dim = std::stoi(value());
    else if (a == "--q-name") o.q_name = value();
    else if (a == "--k-name") o.k_name = value();
    else if (a == "--dtype") {
      const std::string d = value();
      if (d != "f32" && d != "e4m3") throw std::runtime_error("--dtype must be f32 or e4m3");
      o.quantize_e4m3 = d == "e4m3";
    } else if (a == "--token-bound") o.token_bound = std::stod(value());
    else if (a == "--rope-max-offset") o.rope_max_offset = std::stoll(value());
    else if (a == "--rope-base") o.rope_base = std::stod(value());
    else if (a == "--csv") o.csv = true;
    else if (a == "--threads") o.threads = std::stoi(value());
    else if (!a.empty() && a[0] == '-') throw std::runtime_error("unknown option " + a);
    else if (o.model.empty()) o.model = a;
    else throw std::runtime_error("more than one model given");
  }
  if (o.model.empty()) throw std::runtime_error("no model given");
  return o;
}

/// Fills head counts from config.json beside the model when the options leave them open.
void read_config(Options& o) {
  const auto config_path = std::filesystem::path(o.model).parent_path() / "config.json";
  nlohmann::json config;
  if (std::ifstream in(config_path); in) config = nlohmann::json::parse(in);
  auto get = [&](const char* key) -> std::optional<int> {
    if (config.contains(key) && config[key].is_number_integer()) return config[key].get<int>();
    return std::nullopt;
  };
  if (!o.heads) o.heads = get("num_attention_heads");
  if (!o.kv_heads) o.kv_heads = get("num_key_value_heads");
  if (!o.kv_heads) o.kv_heads = o.heads;
  if (!o.head_dim) o.head_dim = get("head_dim");
  if (!o.head_dim && o.heads && get("hidden_size")) o.head_dim = *get("hidden_size") / *o.heads;
  if (!o.heads || !o.head_dim)
    throw std::runtime_error("head counts unknown: give --heads and --head-dim (no usable " + config_path.string() + ")");
}

void detect_names(Options& o, const SafetensorsFile& file) {
  const std::pair<const char*, const char*> known[] = {
      {"encoder.layer.{}.attention.self.query.weight", "encoder.layer.{}.attention.self.key.weight"},
      {"bert.encoder.layer.{}.attention.self.query.weight", "bert.encoder.layer.{}.attention.self.key.weight"},
      {"model.layers.{}.self_attn.q_proj.weight", "model.layers.{}.self_attn.k_proj.weight"}};
  if (!o.q_name.empty() && !o.k_name.empty()) return;
  for (const auto& [q, k] : known)
    if (file.find(layer_name(q, 0)) != nullptr) {
      if (o.q_name.empty()) o.q_name = q;
      if (o.k_name.empty()) o.k_name = k;
      return;
    }
  throw std::runtime_error("no known attention layout in the file; give --q-name and --k-name");
}

/// A weight ready for the ABI: either the mapped bytes or an owned E4M3 copy with its descale.
struct Weight {
  fp8attn_tensor tensor{};
  std::vector<uint8_t> owned;
  float descale = 1.0f;
};

Weight make_weight(const SafetensorsEntry& e, const std::string& name, bool quantize_e4m3) {
  if (e.shape.size() != 2) throw std::runtime_error(name + " is not a matrix");
  int32_t dtype = 0;
  size_t element = 0;
  if (e.dtype == "F32") dtype = FP8ATTN_DTYPE_F32, element = 4;
  else if (e.dtype == "BF16") dtype = FP8ATTN_DTYPE_BF16, element = 2;
  else if (e.dtype == "F8_E4M3") dtype = FP8ATTN_DTYPE_E4M3, element = 1;
  else throw std::runtime_error(name + " has dtype " + e.dtype + "; F32, BF16 or F8_E4M3 supported");
  const size_t count = static_cast<size_t>(e.shape[0] * e.shape[1]);
  if (count * element != e.bytes) throw std::runtime_error(name + ": byte size does not match its shape");
  Weight w;
  w.tensor.struct_size = sizeof w.tensor;
  w.tensor.dtype = dtype;
  w.tensor.device = FP8ATTN_DEVICE_HOST;
  w.tensor.rank = 2;
  w.tensor.shape[0] = e.shape[0];
  w.tensor.shape[1] = e.shape[1];
  w.tensor.stride[0] = e.shape[1];
  w.tensor.stride[1] = 1;
  w.tensor.data = const_cast<uint8_t*>(e.data);
  if (quantize_e4m3 && dtype != FP8ATTN_DTYPE_E4M3) {
    std::vector<float> values(count);
    for (size_t i = 0; i < count; ++i) {
      if (dtype == FP8ATTN_DTYPE_F32) {
        std::memcpy(&values[i], e.data + 4 * i, 4);
      } else {
        uint32_t bits = static_cast<uint32_t>(e.data[2 * i] | (e.data[2 * i + 1] << 8)) << 16;
        std::memcpy(&values[i], &bits, 4);
      }
    }
    float amax = 0.0f;
    for (float v : values) amax = std::max(amax, std::fabs(v));
    // NOTE: per-tensor scale mapping amax onto E4M3's 448, the usual FP8 weight recipe.
    const float scale = amax > 0.0f ? 448.0f / amax : 1.0f;
    w.owned.resize(count);
    for (size_t i = 0; i < count; ++i) w.owned[i] = fp8attn::num::float_to_e4m3(values[i] * scale);
    w.tensor.data = w.owned.data();
    w.tensor.dtype = FP8ATTN_DTYPE_E4M3;
    w.descale = 1.0f / scale;
  }
  return w;
}

void check(int32_t status, const fp8attn_error& err, const char* what) {
  if (status != FP8ATTN_OK)
    throw std::runtime_error(std::string(what) + " failed: " + fp8attn_status_name(status) + ": " + err.message);
}

int run(const Options& cli) {
  Options o = cli;
  const SafetensorsFile file(o.model);
  read_config(o);
  detect_names(o, file);
  const int heads = *o.heads, kv_heads = *o.kv_heads, head_dim = *o.head_dim;

  fp8attn_error err{};
  err.struct_size = sizeof err;
  fp8attn_context_options co{};
  co.struct_size = sizeof co;
  co.backend = FP8ATTN_BACKEND_CPU;
  co.num_threads = o.threads;
  fp8attn_context ctx = nullptr;
  check(fp8attn_context_create(&co, &ctx, &err), err, "fp8attn_context_create");
  struct ContextGuard {
    fp8attn_context c;
    ~ContextGuard() { fp8attn_context_destroy(c); }
  } guard{ctx};

  if (o.csv) std::printf("layer,head,sigma,iterations,residual%s\n", o.rope_max_offset >= 0 ? ",rope_safe,rope_exact" : "");
  else
    std::printf("%s: %d query heads, %d KV heads, head_dim %d, weights %s\n", o.model.c_str(), heads, kv_heads, head_dim,
                o.quantize_e4m3 ? "quantized to E4M3" : "as stored");
  std::vector<float> warm(static_cast<size_t>(heads) * head_dim, 0.0f);
  for (int layer = 0;; ++layer) {
    const SafetensorsEntry* q = file.find(layer_name(o.q_name, layer));
    const SafetensorsEntry* k = file.find(layer_name(o.k_name, layer));
    if (q == nullptr || k == nullptr) {
      if (layer == 0) throw std::runtime_error("no tensor " + layer_name(o.q_name, 0));
      break;
    }
    Weight wq = make_weight(*q, layer_name(o.q_name, layer), o.quantize_e4m3);
    Weight wk = make_weight(*k, layer_name(o.k_name, layer), o.quantize_e4m3);
    const int64_t d_model = wq.tensor.shape[1];
    size_t bytes = 0;
    check(fp8attn_qk_spectral_norms_workspace_size(ctx, heads, kv_heads, head_dim, d_model, &bytes, &err), err,
          "fp8attn_qk_spectral_norms_workspace_size");
    std::vector<uint8_t> workspace(bytes);
    std::vector<float> sigma(heads), residual(heads);
    std::vector<int32_t> iterations(heads);
    fp8attn_power_iteration_options po{};
    po.struct_size = sizeof po;
    po.iterations_out = iterations.data();
    po.residual_out = residual.data();
    po.warm_start = warm.data();  // consecutive layers are unrelated, but a nonzero start is harmless
    std::fill(warm.begin(), warm.end(), 0.0f);
    po.wq_descale = wq.descale;
    po.wk_descale = wk.descale;
    check(fp8attn_qk_spectral_norms(ctx, &wq.tensor, &wk.tensor, heads, kv_heads, head_dim, &po, sigma.data(),
                                    workspace.data(), workspace.size(), nullptr, &err),
          err, "fp8attn_qk_spectral_norms");
    std::vector<float> safe(heads, 0.0f), exact(heads, 0.0f);
    if (o.rope_max_offset >= 0) {
      if (wq.tensor.dtype == FP8ATTN_DTYPE_E4M3)
        throw std::runtime_error("--rope-max-offset reads weights at descale 1; use --dtype f32");
      fp8attn_rope_options ro{};
      ro.struct_size = sizeof ro;
      ro.theta_base = static_cast<float>(o.rope_base);
      ro.max_offset = o.rope_max_offset;
      check(fp8attn_qk_rope_norms(ctx, &wq.tensor, &wk.tensor, heads, kv_heads, head_dim, &ro, safe.data(), exact.data(),
                                  &err),
            err, "fp8attn_qk_rope_norms");
    }
    const float token_bound = static_cast<float>(o.token_bound > 0.0 ? o.token_bound : std::sqrt(static_cast<double>(d_model)));
    float bound = 0.0f, scale = 0.0f;
    check(fp8attn_logit_bound(sigma.data(), heads, head_dim, token_bound, 1.0f, &bound, &scale, &err), err,
          "fp8attn_logit_bound");
    if (o.csv) {
      for (int h = 0; h < heads; ++h) {
        std::printf("%d,%d,%.9g,%d,%.3g", layer, h, sigma[h], iterations[h], residual[h]);
        if (o.rope_max_offset >= 0) std::printf(",%.9g,%.9g", safe[h], exact[h]);
        std::printf("\n");
      }
      continue;
    }
    float sigma_max = 0.0f, sigma_min = sigma[0];
    int it_max = 0;
    for (int h = 0; h < heads; ++h) {
      sigma_max = std::max(sigma_max, sigma[h]);
      sigma_min = std::min(sigma_min, sigma[h]);
      it_max = std::max(it_max, iterations[h]);
    }
    std::printf("layer %2d: sigma %.5g..%.5g (max iterations %d)  B_X %.4g  logit bound %.5g  FP8 logit scale %.5g\n",
                layer, sigma_min, sigma_max, it_max, token_bound, bound, scale);
    if (o.rope_max_offset >= 0) {
      float safe_max = 0.0f, exact_max = 0.0f;
      for (int h = 0; h < heads; ++h) {
        safe_max = std::max(safe_max, safe[h]);
        exact_max = std::max(exact_max, exact[h]);
      }
      std::printf("          RoPE offsets 0..%lld: exact max %.5g, safe bound %.5g (exact/safe %.3f)\n",
                  static_cast<long long>(o.rope_max_offset), exact_max, safe_max, exact_max / safe_max);
    }
  }
  return 0;
}

}  // namespace

int run_spectral_command(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fp8attn spectral: %s\n%s", e.what(), kUsage);
    return 2;
  }
}
