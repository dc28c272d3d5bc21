#include "lib/core/thread_pool.hpp"

#include <string>

#include "lib/core/error.hpp"

namespace fp8attn {

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
