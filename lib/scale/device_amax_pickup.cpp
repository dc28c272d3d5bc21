#include "lib/scale/device_amax_pickup.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "lib/core/error.hpp"
#include "lib/scale/scale_state.hpp"

namespace fp8attn {

/// One report in flight. The enqueuing thread fills it after acquire(); the host function reads
/// it once the stream has run the copy (the stream orders the two), then releases it.
struct DeviceAmaxPickup::Slot {
  DeviceAmaxPickup* owner = nullptr;
  float* staging = nullptr;  ///< kMaxFloats page-locked floats
  std::atomic<bool> busy{false};
  ScaleState* state = nullptr;
  int32_t layer = 0;
  float* amax_o = nullptr;
  int count = 0;
  int32_t kinds[kMaxFloats] = {};  ///< staging[i] is the amax of tensor kind kinds[i]
  bool forward = false;            ///< a forward call's figures: a non-finite one is NUMERICS
  int32_t status = FP8ATTN_OK;     ///< the fold's outcome
  char message[256] = {};
};

DeviceAmaxPickup::DeviceAmaxPickup(Backend& backend, const Log& log)
    : backend_(backend), log_(log), immediate_(backend.completes_on_return()), slots_(new Slot[kSlots]) {
  staging_ = static_cast<float*>(backend_.allocate_pinned(sizeof(float) * kSlots * kMaxFloats));
  for (int i = 0; i < kSlots; ++i) {
    slots_[i].owner = this;
    slots_[i].staging = staging_ + static_cast<ptrdiff_t>(i) * kMaxFloats;
  }
}

DeviceAmaxPickup::~DeviceAmaxPickup() { backend_.release_pinned(staging_); }

int DeviceAmaxPickup::in_flight() const {
  int n = 0;
  for (int i = 0; i < kSlots; ++i) n += slots_[i].busy.load(std::memory_order_acquire) ? 1 : 0;
  return n;
}

DeviceAmaxPickup::Slot& DeviceAmaxPickup::acquire() {
  for (int tries = 0; tries < kSlots; ++tries) {
    Slot& s = slots_[next_.fetch_add(1, std::memory_order_relaxed) % kSlots];
    bool expected = false;
    if (s.busy.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
      s.state = nullptr;
      s.layer = 0;
      s.amax_o = nullptr;
      s.forward = false;
      s.status = FP8ATTN_OK;
      s.message[0] = '\0';
      return s;
    }
  }
  throw Error(FP8ATTN_STATUS_OUT_OF_MEMORY,
              "all " + std::to_string(kSlots) +
                  " staging slots of the device amax pickup are in flight: synchronize the streams that carry "
                  "forward calls with an amax or scale state, or device amax reports");
}

void DeviceAmaxPickup::enqueue(Slot& slot, const void* device, CUstream_st* stream) {
  try {
    backend_.enqueue_host_pickup(slot.staging, device, sizeof(float) * static_cast<size_t>(slot.count), &fold, &slot,
                                 stream);
  } catch (...) {
    // NOTE: nothing was folded (a failed enqueue runs no host function), so the slot is free.
    slot.busy.store(false, std::memory_order_release);
    throw;
  }
  if (!immediate_) return;
  // The fold ran inside the call: its outcome is this call's.
  const int32_t status = slot.status;
  const std::string message = slot.message;
  slot.busy.store(false, std::memory_order_release);
  if (status != FP8ATTN_OK) throw Error(status, message);
}

DeviceAmaxPickup::Reservation::~Reservation() {
  if (slot_ != nullptr) slot_->busy.store(false, std::memory_order_release);
}

DeviceAmaxPickup::Reservation DeviceAmaxPickup::reserve_forward(ScaleState* state, int32_t layer, float* amax_o) {
  Slot& s = acquire();
  s.state = state;
  s.layer = layer;
  s.amax_o = amax_o;
  s.forward = true;
  s.count = 2;
  s.kinds[0] = FP8ATTN_TENSOR_LOGIT;  // FwdTelemetryCounters: the logit amax, then max |O|
  s.kinds[1] = FP8ATTN_TENSOR_O;
  return Reservation(&s);
}

void DeviceAmaxPickup::submit_forward(Reservation& reservation, const void* device_pair, CUstream_st* stream) {
  require(reservation.slot_ != nullptr, FP8ATTN_STATUS_INTERNAL, "device amax pickup: a reservation submitted twice");
  Slot& s = *reservation.slot_;
  reservation.slot_ = nullptr;  // enqueue() or the host function releases it from here on
  enqueue(s, device_pair, stream);
}

void DeviceAmaxPickup::enqueue_report(ScaleState& state, int32_t layer, const float* device_amax, CUstream_st* stream) {
  const int32_t layers = state.num_layers();
  require(layer >= 0 && layer < layers, FP8ATTN_STATUS_INVALID_ARGUMENT,
          "layer " + std::to_string(layer) + " is out of range 0.." + std::to_string(layers - 1));
  Slot& s = acquire();
  s.state = &state;
  s.layer = layer;
  s.count = FP8ATTN_NUM_TENSOR_KINDS;
  for (int i = 0; i < FP8ATTN_NUM_TENSOR_KINDS; ++i) s.kinds[i] = i;
  enqueue(s, device_amax, stream);
}

void DeviceAmaxPickup::fold(void* arg) noexcept {
  Slot& s = *static_cast<Slot*>(arg);
  try {
    float report[FP8ATTN_NUM_TENSOR_KINDS];
    std::fill(report, report + FP8ATTN_NUM_TENSOR_KINDS, -1.0f);  // negative: not reported
    for (int i = 0; i < s.count; ++i) report[s.kinds[i]] = s.staging[i];
    if (s.forward)
      for (int i = 0; i < s.count; ++i)
        require(std::isfinite(s.staging[i]), FP8ATTN_STATUS_NUMERICS,
                std::string("the forward's amax of ") + (s.kinds[i] == FP8ATTN_TENSOR_O ? "O" : "the logits") +
                    " is not finite (an output overflowed); the report was dropped");
    // The state checks every entry before it records any, under its lock (one whole report).
    if (s.state != nullptr) s.state->report_amax_layer(s.layer, report);
    if (s.amax_o != nullptr) *s.amax_o = report[FP8ATTN_TENSOR_O];
  } catch (const Error& e) {
    s.status = e.status();
    std::snprintf(s.message, sizeof s.message, "%s", e.what());
  } catch (const std::exception& e) {
    s.status = FP8ATTN_STATUS_INTERNAL;
    std::snprintf(s.message, sizeof s.message, "device amax pickup: %s", e.what());
  }
  if (s.owner->immediate_) return;  // the enqueuing call reads the status and releases the slot
  // NOTE: on a real stream no call is left to return the status: the report is dropped whole
  // and the context's log says why.
  if (s.status != FP8ATTN_OK) s.owner->log_.warn("device amax report dropped: {}", s.message);
  s.busy.store(false, std::memory_order_release);
}

}  // namespace fp8attn
