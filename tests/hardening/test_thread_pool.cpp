// The thread pool's guards: a pool knows its own worker threads,
// which fp8attn_context_destroy uses to refuse destroying a context from one of them (its pool
// would join the calling thread); the body's exception still reaches the caller after every
// worker stopped; and a pool without workers (one thread) runs everything on the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "lib/core/thread_pool.hpp"

namespace fp8attn {
namespace {

TEST(ThreadPoolGuards, KnowsItsOwnWorkerThreads) {
  ThreadPool pool(4);
  EXPECT_FALSE(pool.on_worker_thread());  // the caller is worker 0 but not one of the pool's threads
  std::vector<int> seen(64, -1);
  std::atomic<int> worker_items{0};
  pool.parallel_for(64, [&](int64_t item, int worker) {
    const bool mine = pool.on_worker_thread();
    seen[item] = mine ? 1 : 0;
    EXPECT_EQ(mine, worker != 0) << "item " << item << " on worker " << worker;
    if (worker != 0) ++worker_items;
  });
  for (int s : seen) EXPECT_NE(s, -1);
  ThreadPool other(2);
  bool other_sees_mine = true;
  pool.parallel_for(8, [&](int64_t, int worker) {
    if (worker != 0) other_sees_mine = other_sees_mine && !other.on_worker_thread();
  });
  EXPECT_TRUE(other_sees_mine) << "a pool must not claim another pool's threads";
  std::printf("%d of 64 items ran on the pool's own threads\n", worker_items.load());
}

TEST(ThreadPoolGuards, FirstExceptionReachesTheCallerAndThePoolStaysUsable) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(100,
                                 [&](int64_t item, int) {
                                   if (item == 37) throw std::runtime_error("item 37");
                                 }),
               std::runtime_error);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, [&](int64_t item, int) { sum += item; });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(ThreadPoolGuards, OneThreadRunsOnTheCaller) {
  ThreadPool pool(1);
  const auto caller = std::this_thread::get_id();
  bool all_on_caller = true;
  pool.parallel_for(10, [&](int64_t, int worker) {
    all_on_caller = all_on_caller && worker == 0 && std::this_thread::get_id() == caller;
  });
  EXPECT_TRUE(all_on_caller);
  EXPECT_FALSE(pool.on_worker_thread());
}

}  // namespace
}  // namespace fp8attn
