// fp8attn_attention_forward: validate everything, then hand the problem to the backend.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <string>

#include "capi/abi_guard.hpp"
#include "capi/versioned_struct.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/context/context.hpp"
#include "lib/context/plan.hpp"
#include "lib/core/logging.hpp"
#include "lib/core/nvtx.hpp"
#include "lib/core/tensor.hpp"
#include "lib/scale/device_amax_pickup.hpp"
#include "lib/scale/scale_state.hpp"

using fp8attn::capi::guarded;
using fp8attn::capi::read_struct;
using fp8attn::require;

namespace {

/// The training options of one call (out_scale, amax_o, the scale state), resolved and checked
/// before anything runs.
struct TrainingOptions {
  fp8attn::ScaleState* state = nullptr;
  int32_t layer = 0;
  fp8attn::ScaleState::ForwardScales scales{};  ///< from the state (when set)
  float out_scale = 1.0f;                        ///< E4M3 output: from args.out_scale or the state
  bool measure = false;                          ///< amax_o or a state: the engine fills ForwardAmax
};

/// Checks out_scale, amax_o and the scale state against the plan and the backend, and reads the
/// state's scales once. Throws on the first problem; changes nothing.
TrainingOptions resolve_training_options(const fp8attn::AttentionConfig& cfg, const fp8attn_attention_args& a,
                                         const fp8attn::Backend& backend) {
  TrainingOptions t;
  const bool e4m3_out = cfg.output_dtype == FP8ATTN_DTYPE_E4M3;
  FP8ATTN_REQUIRE(a.scale_state != nullptr || a.scale_state_layer == 0, FP8ATTN_STATUS_INVALID_ARGUMENT,
                  "args.scale_state_layer is " + std::to_string(a.scale_state_layer) +
                      " but args.scale_state is NULL: a layer needs a state (leave the layer 0 without one)");
  FP8ATTN_REQUIRE((a.amax_o == nullptr && a.scale_state == nullptr) || backend.measures_forward_amax(),
                  FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
                  std::string(a.scale_state ? "args.scale_state" : "args.amax_o") + " on the " +
                      fp8attn::backend_log_name(backend.kind()) +
                      " backend: it measures no amax of O and no logit amax; the CPU, emulator and CUDA backends "
                      "do");
  FP8ATTN_REQUIRE(a.out_scale == nullptr || e4m3_out, FP8ATTN_STATUS_BAD_OPTION,
                  "args.out_scale is set but desc.output_dtype is " + fp8attn::dtype_name(cfg.output_dtype) +
                      ": an output scale applies to E4M3 output only");
  FP8ATTN_REQUIRE(a.out_scale == nullptr || a.scale_state == nullptr, FP8ATTN_STATUS_BAD_OPTION,
                  "args.out_scale and args.scale_state are both set: the E4M3 output scale comes from one of them "
                  "(the state's FP8ATTN_TENSOR_O scale, or out_scale without a state)");
  FP8ATTN_REQUIRE(!e4m3_out || a.out_scale != nullptr || a.scale_state != nullptr, FP8ATTN_STATUS_NULL_POINTER,
                  "args.out_scale is NULL: E4M3 output (desc.output_dtype) needs an output scale, from "
                  "args.out_scale or from args.scale_state");
  if (a.out_scale != nullptr) {
    const float s = *a.out_scale;
    FP8ATTN_REQUIRE(std::isfinite(s) && s > 0.0f, FP8ATTN_STATUS_BAD_SCALE,
                    "*args.out_scale must be finite and > 0, got " + std::to_string(s));
    t.out_scale = s;
  }
  if (a.scale_state != nullptr) {
    // NOTE: one rule instead of a precedence: the state's per-tensor descales replace nothing.
    FP8ATTN_REQUIRE(a.q_descale.data == nullptr && a.k_descale.data == nullptr && a.v_descale.data == nullptr,
                    FP8ATTN_STATUS_BAD_OPTION,
                    "args.q_descale/k_descale/v_descale and args.scale_state are both set: with a state the "
                    "per-tensor descales come from it (1/scale of Q, K and V); pass no descale tensors");
    t.state = &a.scale_state->impl;
    t.layer = a.scale_state_layer;
    t.scales = t.state->forward_scales(t.layer);  // INVALID_ARGUMENT for a layer out of range
    FP8ATTN_REQUIRE(t.scales.logit_scale == 1.0f, FP8ATTN_STATUS_UNSUPPORTED,
                    "the scale state's layer " + std::to_string(t.layer) + " has a logit scale of " +
                        std::to_string(t.scales.logit_scale) +
                        ", but the forward computes the logits in FP32 and casts none to FP8: it has no place to "
                        "apply a logit scale (see fp8attn_attention_forward)");
    if (e4m3_out) t.out_scale = t.scales.o_scale;
  }
  t.measure = a.amax_o != nullptr || a.scale_state != nullptr;
  return t;
}

}  // namespace

extern "C" {

int32_t fp8attn_attention_forward(fp8attn_plan plan, const fp8attn_attention_args* args, void* workspace,
                                  size_t workspace_bytes, struct CUstream_st* stream, fp8attn_error* err) {
  return guarded(err, [&] {
    FP8ATTN_REQUIRE(plan != nullptr, FP8ATTN_STATUS_BAD_HANDLE, "plan is NULL");
    fp8attn_attention_args defaults{};
    const fp8attn_attention_args a =
        read_struct(args, "fp8attn_attention_args", FP8ATTN_LAYOUT_THROUGH(fp8attn_attention_args, telemetry), defaults,
                    /*chain_allowed=*/true);  // NOTE: make_attention_problem walks args.next
    fp8attn::Backend& backend = plan->context->backend();
    FP8ATTN_REQUIRE(stream == nullptr || backend.tensor_device() == FP8ATTN_DEVICE_CUDA, FP8ATTN_STATUS_BAD_STREAM,
            "a CUDA stream was given to a CPU backend; pass NULL");
    fp8attn::AttentionProblem problem = fp8attn::make_attention_problem(plan->config, a, backend.tensor_device());
    FP8ATTN_REQUIRE(!plan->config.decode || problem.max_seqlen_q <= FP8ATTN_MAX_DECODE_Q_LEN, FP8ATTN_STATUS_BAD_SHAPE,
                    "desc.decode = 1 takes at most FP8ATTN_MAX_DECODE_Q_LEN = 8 queries per sequence; this call has "
                    "max_seqlen_q = " + std::to_string(problem.max_seqlen_q));
    const TrainingOptions training = resolve_training_options(plan->config, a, backend);
    // A state's per-tensor descales, by value: the GPU kernel cannot read the host's state.
    if (training.state) {
      problem.q_descale = {nullptr, 0, 0, training.scales.q_descale};
      problem.k_descale = {nullptr, 0, 0, training.scales.k_descale};
      problem.v_descale = {nullptr, 0, 0, training.scales.v_descale};
    }
    problem.out_scale = training.out_scale;
    // NOTE: after the state's descales are in: a logit or output scale that can leave FP32's
    // range is refused here, before any output is written (NaN from finite inputs otherwise).
    fp8attn::require_scales_in_range(plan->config, problem, backend.tensor_device());
    // The CPU engine measures into host memory; a device backend leaves the amaxes in the
    // workspace, and the pickup carries them to the state and amax_o on the stream.
    const int64_t device_amax_offset = backend.forward_amax_offset();
    const bool device_measure = training.measure && device_amax_offset >= 0;
    fp8attn::ForwardAmax measured;
    if (training.measure && !device_measure) problem.amax = &measured;
    // NOTE: the logit amax is telemetry's max |scaled logit|, so a call with a state measures it
    // even when the plan has desc.telemetry = 0; the caller's telemetry struct is still filled
    // only when the plan asked for it (problem.telemetry is NULL otherwise). The device kernels
    // measure max |O| only in their telemetry variant, so amax_o turns it on there too.
    fp8attn::AttentionConfig run_config = plan->config;
    if (training.state || device_measure) run_config.telemetry = true;
    const size_t needed =
        backend.attention_workspace_size(run_config, problem.batch, problem.max_seqlen_q, problem.max_seqlen_k);
    FP8ATTN_REQUIRE(workspace_bytes >= needed, FP8ATTN_STATUS_WORKSPACE_TOO_SMALL,
            "workspace has " + std::to_string(workspace_bytes) + " bytes; this problem needs " + std::to_string(needed));
    FP8ATTN_REQUIRE(needed == 0 || workspace != nullptr, FP8ATTN_STATUS_NULL_POINTER, "workspace is NULL");
    const fp8attn::Log& log = plan->context->log();
    log.debug("forward: backend {}, batch {} ({}), seqlen_q {} seqlen_k {} (max), heads_q={} heads_kv={} "
              "head_dim={}, tile {}x{}, workspace {} bytes given, {} needed",
              fp8attn::backend_log_name(backend.kind()), problem.batch, problem.varlen ? "varlen" : "padded",
              problem.max_seqlen_q, problem.max_seqlen_k, plan->config.num_heads_q, plan->config.num_heads_kv,
              plan->config.head_dim, plan->config.tile.block_m, plan->config.tile.block_n, workspace_bytes, needed);
    // NOTE: the clock is read only when TRACE is on, so the default path costs nothing.
    const bool timed = log.enabled(fp8attn::LogLevel::trace);
    const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const fp8attn::NvtxRange range("fp8attn_attention_forward b{} sq{} sk{} hq{} hkv{} d{}{}", problem.batch,
                                   problem.max_seqlen_q, problem.max_seqlen_k, plan->config.num_heads_q,
                                   plan->config.num_heads_kv, plan->config.head_dim,
                                   plan->config.causal ? " causal" : "");
    if (device_measure) {
      fp8attn::DeviceAmaxPickup* pickup = plan->context->amax_pickup();
      FP8ATTN_REQUIRE(pickup != nullptr, FP8ATTN_STATUS_INTERNAL, "a device backend without an amax pickup");
      // Reserved before the launch: a full pool fails the call before anything ran.
      fp8attn::DeviceAmaxPickup::Reservation slot = pickup->reserve_forward(training.state, training.layer, a.amax_o);
      backend.attention_forward(run_config, problem, workspace, workspace_bytes, stream);
      // NOTE: stream-ordered, no host synchronization: the state and amax_o are written when the
      // stream reaches the end of the kernel (at once on the emulator).
      pickup->submit_forward(slot, static_cast<const unsigned char*>(workspace) + device_amax_offset, stream);
    } else {
      backend.attention_forward(run_config, problem, workspace, workspace_bytes, stream);
    }
    // Only after success: the state's report (as fp8attn_scale_state_report_amax(), the kinds
    // this call did not measure left out), then amax_o.
    if (training.state && !device_measure) {
      float report[FP8ATTN_NUM_TENSOR_KINDS];
      std::fill(std::begin(report), std::end(report), -1.0f);
      report[FP8ATTN_TENSOR_O] = measured.o;
      report[FP8ATTN_TENSOR_LOGIT] = measured.logit;
      training.state->report_amax_layer(training.layer, report);
    }
    if (a.amax_o && !device_measure) *a.amax_o = measured.o;
    if (timed)
      log.trace("forward: {:.3f} ms in backend {}",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
                fp8attn::backend_log_name(backend.kind()));
  });
}

}  // extern "C"
