// The stream-ordered pickup of amaxes that live in device memory: a forward call's
// {max |scaled logit|, max |O|} in its workspace, or the eight floats of
// fp8attn_scale_state_report_amax_device(). Per report, the device backend enqueues on the
// caller's stream an async copy into a page-locked staging slot and then a host function
// (cudaLaunchHostFunc) that folds the slot into the scale state under the state's lock and
// writes amax_o; the emulator runs both at once. No host synchronization happens in the call.
//
// NOTE: the staging is the context's, not the state's: a forward call may ask for amax_o with no
// state, and page-locked memory is allocated once, at context creation (an execute call must not
// allocate). The slots are a fixed pool; a report takes one until its host function has run.
//
// Ordering rule (TransformerEngine's): a report lands in the state when the stream reaches it.
// Synchronize every stream that carries reports before fp8attn_scale_state_step(),
// _get_scale() or _serialize() should see them; each of those sees either all of one report or
// none of it (the fold takes the exclusive lock once).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "lib/backend/backend.hpp"
#include "lib/core/log.hpp"

struct CUstream_st;

namespace fp8attn {

class ScaleState;

class DeviceAmaxPickup {
 public:
  /// Slots in flight at most, per context. NOTE: 256 reports of 8 floats are 8 KB of page-locked
  /// memory; a training step reports a few per layer and synchronizes before its step().
  static constexpr int kSlots = 256;
  static constexpr int kMaxFloats = 8;

  /// Allocates the page-locked staging through `backend` (a device backend). Throws Error.
  DeviceAmaxPickup(Backend& backend, const Log& log);
  /// The caller guarantees that no stream still holds a pickup (fp8attn_context_destroy's rule).
  ~DeviceAmaxPickup();
  DeviceAmaxPickup(const DeviceAmaxPickup&) = delete;
  DeviceAmaxPickup& operator=(const DeviceAmaxPickup&) = delete;

  struct Slot;
  /// A slot taken for one forward call before its launch, so that a full pool fails the call
  /// before anything ran; released by submit()'s host function, or here if never submitted.
  class Reservation {
   public:
    Reservation(Reservation&& other) noexcept : slot_(other.slot_) { other.slot_ = nullptr; }
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation();

   private:
    friend class DeviceAmaxPickup;
    explicit Reservation(Slot* slot) : slot_(slot) {}
    Slot* slot_;
  };

  /// Reserves the slot of a forward call's amaxes. Throws Error(OUT_OF_MEMORY) when all are in
  /// flight. On arrival both figures are folded into `state`'s `layer` (when `state` is set) and
  /// max |O| written to `*amax_o` (when set).
  Reservation reserve_forward(ScaleState* state, int32_t layer, float* amax_o);
  /// Enqueues the pickup of `device_pair` = {max |scaled logit|, max |O|} (F32, device) after the
  /// call's kernel. A non-finite figure drops the whole report: FP8ATTN_STATUS_NUMERICS, thrown
  /// here where the runtime completes on return, logged as a warning otherwise.
  void submit_forward(Reservation& reservation, const void* device_pair, CUstream_st* stream);
  /// fp8attn_scale_state_report_amax_device(): eight floats in fp8attn_tensor_kind order, negative
  /// = not reported; the state's checks apply on arrival (BAD_SCALE for a non-finite entry).
  void enqueue_report(ScaleState& state, int32_t layer, const float* device_amax, CUstream_st* stream);

  /// Slots taken and not yet released (for tests: 0 once the streams are done).
  int in_flight() const;

 private:
  Slot& acquire();
  void enqueue(Slot& slot, const void* device, CUstream_st* stream);
  static void fold(void* slot) noexcept;

  Backend& backend_;
  const Log& log_;
  const bool immediate_;  ///< the runtime completes on return: the caller reads the fold's status
  float* staging_ = nullptr;  ///< kSlots · kMaxFloats page-locked floats
  std::unique_ptr<Slot[]> slots_;
  std::atomic<unsigned> next_{0};
};

}  // namespace fp8attn
