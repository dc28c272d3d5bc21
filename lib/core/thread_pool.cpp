#include "lib/core/thread_pool.hpp"

#include <chrono>
#include <string>

#include "lib/core/error.hpp"

namespace fp8attn {
namespace {

/// How long a thread polls before it sleeps on a condition variable.
/// NOTE: waking a sleeping thread (a futex round trip) took 20 to 45 µs on a 2-core VM, so a
/// parallel loop of trivial items cost that much, a fifth of a 200 µs combine of two L3-resident
/// parts; calls made back to back (a serving step's layers, a benchmark) find the workers polling.
/// OpenMP runtimes poll the same way, for far longer by default.
constexpr auto kPollBeforeSleep = std::chrono::microseconds(50);

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Polls ready() until it holds (true) or kPollBeforeSleep has passed (false).
template <class Ready>
bool poll_until(Ready ready) {
  const auto end = std::chrono::steady_clock::now() + kPollBeforeSleep;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if (i % 64 == 63 && std::chrono::steady_clock::now() >= end) return false;
    cpu_relax();
  }
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads < 1 ? 1 : num_threads) {
  // NOTE: a failed thread start must not unwind through members that started workers still
  // wait on (a joinable std::thread's destructor calls std::terminate): stop and join those
  // workers first, then report.
  try {
    threads_.reserve(static_cast<size_t>(num_threads_ - 1));
    for (int w = 1; w < num_threads_; ++w) threads_.emplace_back([this, w] { worker_main(w); });
  } catch (const std::exception& e) {
    const size_t started = threads_.size();
    stop_and_join();
    throw Error(FP8ATTN_STATUS_OUT_OF_MEMORY, "could not start worker thread " + std::to_string(started + 1) + " of " +
                                                  std::to_string(num_threads_ - 1) + " (" + e.what() +
                                                  "); ask for fewer threads");
  }
}

ThreadPool::~ThreadPool() { stop_and_join(); }

void ThreadPool::stop_and_join() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) {
    // NOTE: a worker that destroys its own pool (a callback destroying its context) cannot
    // join itself; it is detached and returns once the callback does.
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();
    } else if (t.joinable()) {
      t.join();
    }
  }
  threads_.clear();
}

bool ThreadPool::on_worker_thread() const {
  for (const auto& t : threads_)
    if (t.get_id() == std::this_thread::get_id()) return true;
  return false;
}

void ThreadPool::run_items(int worker) {
  for (;;) {
    int64_t item;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (next_item_ >= num_items_ || first_error_) return;
      item = next_item_++;
    }
    try {
      (*body_)(item, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!first_error_) first_error_ = std::current_exception();
    }
  }
}

void ThreadPool::worker_main(int worker) {
  uint64_t seen = 0;
  for (;;) {
    poll_until([&] {
      return stopping_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
    });
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    run_items(worker);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--busy_workers_ == 0) done_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int64_t num_items, FunctionRef<void(int64_t, int)> body) {
  std::lock_guard<std::mutex> call_lock(call_mutex_);
  if (num_items <= 0) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    body_ = &body;
    num_items_ = num_items;
    next_item_ = 0;
    first_error_ = nullptr;
    busy_workers_ = num_threads_ - 1;
    ++generation_;
  }
  wake_.notify_all();
  run_items(0);
  poll_until([&] { return busy_workers_.load(std::memory_order_acquire) == 0; });
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return busy_workers_ == 0; });
    body_ = nullptr;
    error = first_error_;
    first_error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace fp8attn
