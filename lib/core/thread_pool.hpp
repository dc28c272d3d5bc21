// A fixed set of worker threads that runs one parallel loop at a time.
//
// NOTE: a context owns one pool, created with the context, so an execute call starts no thread
// and allocates nothing. Between loops a worker polls for the next one for a few tens of
// microseconds before it sleeps, and the caller polls for the workers' end the same way
// (thread_pool.cpp). Calls from several host threads are serialized on the pool (each call
// still uses every worker). Work items are independent and each is computed by exactly one
// worker, so results do not depend on the number of threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "lib/core/function_ref.hpp"

namespace fp8attn {

class ThreadPool {
 public:
  /// `num_threads` ≥ 1; the calling thread counts as one of them. When a worker cannot start,
  /// the workers already started are stopped and joined, and Error(OUT_OF_MEMORY) is thrown.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return num_threads_; }

  /// Runs body(item, worker) for item in [0, num_items), worker in [0, size()). Items are handed
  /// out dynamically. Blocks until all are done. The first exception thrown by a body is
  /// rethrown here after every worker has stopped.
  void parallel_for(int64_t num_items, FunctionRef<void(int64_t item, int worker)> body);

  /// True on one of this pool's worker threads (not the caller's thread).
  bool on_worker_thread() const;

 private:
  void worker_main(int worker);
  void stop_and_join();
  void run_items(int worker);

  int num_threads_;
  std::vector<std::thread> threads_;
  std::mutex call_mutex_;  // one parallel_for at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const FunctionRef<void(int64_t, int)>* body_ = nullptr;
  int64_t num_items_ = 0;
  int64_t next_item_ = 0;
  // Written under mutex_; atomic so that the polls before sleeping can read them without it.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> busy_workers_{0};
  std::atomic<bool> stopping_{false};
  std::exception_ptr first_error_;
};

}  // namespace fp8attn
