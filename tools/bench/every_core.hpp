// The ceilings' threads (memcpy, a read stream, the decode's products): one per core, started
// once per benchmark, each iteration handed to all of them at once.
//
// NOTE: why not a std::thread per iteration. Starting and joining two threads took about 70 µs on
// a 2-core VM, half the time of a 12 MB L3-resident memcpy, so a ceiling timed with the threads'
// start read about 40 % low and every ratio against it high. The library's own pool also starts
// its threads once (lib/core/thread_pool.hpp).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace fp8attn::bench {

class EveryCore {
 public:
  EveryCore() : size_(static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {
    for (int t = 1; t < size_; ++t) workers_.emplace_back([this, t] { serve(t); });
  }
  ~EveryCore() {
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    for (std::thread& w : workers_) w.join();
  }
  EveryCore(const EveryCore&) = delete;
  EveryCore& operator=(const EveryCore&) = delete;

  /// Threads, the caller's included: one per core.
  int size() const { return size_; }

  /// Runs body(t) for t in [0, size()), t = 0 on the calling thread; returns when all are done.
  template <class Body>
  void run(Body& body) {
    call_ = [](void* b, int t) { (*static_cast<Body*>(b))(t); };
    body_ = &body;
    done_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    body(0);
    for (int spins = 0; done_.load(std::memory_order_acquire) != size_ - 1; ++spins) pause(spins);
  }

 private:
  /// NOTE: the workers wait spinning, so that an iteration starts without a wake-up; after a
  /// while they also yield, in case the machine has fewer free cores than it reports.
  static void pause(int spins) {
    _mm_pause();
    if (spins % 1024 == 1023) std::this_thread::yield();
  }

  void serve(int t) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t now;
      for (int spins = 0; (now = generation_.load(std::memory_order_acquire)) == seen; ++spins) pause(spins);
      seen = now;
      if (stop_.load(std::memory_order_relaxed)) return;
      call_(body_, t);
      done_.fetch_add(1, std::memory_order_release);
    }
  }

  int size_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> stop_{false};
  void (*call_)(void*, int) = nullptr;
  void* body_ = nullptr;
};

}  // namespace fp8attn::bench
