// The CTA's dynamic shared memory: bounds checks and the race check's records of each access.
#include "kernels/emu/cta.hpp"
#include "kernels/emu/primitives.hpp"

namespace fp8attn::emu {

void* dynamic_smem() { return current_cta().smem(); }

size_t dynamic_smem_size() { return current_cta().smem_size(); }

void check_smem_access(const void* addr, size_t bytes, bool is_write) {
  Cta& cta = current_cta();
  const size_t offset =
      cta.smem_offset(addr, bytes, is_write ? "shared memory write" : "shared memory read");
  if (RaceCheck* race = cta.race()) {
    if (auto conflict = race->access(cta.current_thread(), offset, bytes, is_write)) {
      cta.report_race(*conflict);
    }
  }
  // A write may be what a polling thread waits for (a flag in shared memory).
  if (is_write) cta.note_progress();
}

void check_smem_access(const void* addr, size_t bytes, bool is_write, const SourceSite& site) {
  check_smem_access(addr, bytes, is_write);
  Cta& cta = current_cta();
  if (SmemTrafficRecorder* traffic = cta.traffic()) {
    const auto offset = static_cast<uint32_t>(static_cast<const std::byte*>(addr) - cta.smem());
    traffic->generic(cta.current_thread(), offset, static_cast<uint32_t>(bytes), site);
  }
}

void record_async_smem_access(const void* addr, size_t bytes, bool is_write,
                              const void* completing_mbarrier) {
  const AsyncSmemRange range{addr, bytes};
  record_async_smem_accesses({&range, 1}, is_write, completing_mbarrier);
}

void record_async_smem_accesses(std::span<const AsyncSmemRange> ranges, bool is_write,
                                const void* completing_mbarrier) {
  Cta& cta = current_cta();
  const char* what = is_write ? "async-proxy shared memory write (TMA)" : "async-proxy shared memory read (wgmma/TMA store)";
  if (completing_mbarrier != nullptr) {
    const size_t bar = cta.smem_offset(completing_mbarrier, 8, "completing mbarrier of an async copy");
    auto it = cta.mbarriers().by_offset.find(bar);
    if (it == cta.mbarriers().by_offset.end() || !it->second.live) {
      cta.fail(cta.describe_thread(cta.current_thread()) +
               ": async copy completing on the mbarrier at shared memory offset " +
               std::to_string(bar) + ", which is not initialized");
    }
  }
  RaceCheck* race = cta.race();
  const unsigned me = cta.current_thread();
  if (race != nullptr) race->order_agent_after_thread(me);
  for (const AsyncSmemRange& r : ranges) {
    const size_t offset = cta.smem_offset(r.addr, r.bytes, what);
    if (race == nullptr) continue;
    if (auto conflict = race->access(race->agent_slot(me), offset, r.bytes, is_write)) {
      cta.report_race(*conflict);
    }
  }
  if (is_write) cta.note_progress();
}

void acquire_async_accesses(Group group) {
  Cta& cta = current_cta();
  RaceCheck* race = cta.race();
  if (race == nullptr) return;
  const ThreadContext& me = cta.context(cta.current_thread());
  const unsigned size = group == Group::Warp ? 32 : 128;
  const unsigned first = (me.linear_tid / size) * size;
  const unsigned last = std::min(first + size, cta.thread_count());
  for (unsigned t = first; t < last; ++t) race->acquire_agent(me.linear_tid, t);
}

void acquire_own_async_accesses() {
  Cta& cta = current_cta();
  if (RaceCheck* race = cta.race()) race->acquire_agent(cta.current_thread(), cta.current_thread());
}

void fence_proxy_async_shared_cta() {
  Cta& cta = current_cta();
  if (RaceCheck* race = cta.race()) race->proxy_fence(cta.current_thread());
}

void yield() { current_cta().yield_now(/*spinning=*/true); }

}  // namespace fp8attn::emu
