// Host semantics of the synchronization primitives, called by kernels/arch on the emulator build.
// Each follows the PTX ISA 9.0 section cited beside it (facts collected in PTX_FACTS.md §5, §10).
// Every misuse the ISA calls undefined is reported as a KernelError rather than guessed at.
#pragma once

#include <cstdint>

namespace fp8attn::emu {

// Number of named barriers per CTA, ids 0..15 (PTX ISA 9.0 §9.7.13.1 bar).
inline constexpr unsigned kNamedBarrierCount = 16;

// bar.sync id, thread_count (PTX ISA 9.0 §9.7.13.1). thread_count == 0 means "all threads of the
// CTA" (the form without b; __syncthreads is bar.sync 0). Otherwise thread_count must be a
// positive multiple of 32. The caller arrives and waits until thread_count threads arrived on the
// same barrier; then the barrier resets. Every arrival releases, and every waiter acquires, so
// the accesses before the barrier happen-before the accesses after it.
void barrier_sync(unsigned id, unsigned thread_count);
// bar.arrive id, thread_count: arrives (releases) without waiting; thread_count is required and
// non-zero. Arriving twice on the same barrier before it resets is an error (§9.7.13.1).
void barrier_arrive(unsigned id, unsigned thread_count);

// mbarrier (PTX ISA 9.0 §9.7.13.15). The object is 8 bytes, 8-byte aligned, in the CTA's shared
// memory; its state (phase, pending and expected arrival counts, tx-count) lives in the emulator.
// init: phase 0, pending = expected = count, tx-count 0; count in [1, 2^20-1] (§9.7.13.15.9).
void mbarrier_init(uint64_t* mbar, uint32_t count);
// inval (mbarrier.inval): the object may be initialized again afterwards.
void mbarrier_inval(uint64_t* mbar);
// expect-tx: tx-count += bytes (§9.7.13.15.11).
void mbarrier_expect_tx(uint64_t* mbar, uint32_t bytes);
// arrive: pending -= count, then the completion check (§9.7.13.15.13, §9.7.13.15.6). Returns the
// state token: the phase before the arrive.
uint64_t mbarrier_arrive(uint64_t* mbar, uint32_t count = 1);
// arrive.expect_tx: expect-tx(bytes) first, then arrive with count 1 (§9.7.13.15.13).
uint64_t mbarrier_arrive_expect_tx(uint64_t* mbar, uint32_t bytes);
// try_wait.parity: true iff the phase of parity `parity` has completed, i.e. the current phase's
// parity differs from `parity` (§9.7.13.15.16). It may suspend the caller until then; in shuffle
// mode it sometimes returns false first, since the ISA lets it time out. Acquires on success.
bool mbarrier_try_wait_parity(uint64_t* mbar, uint32_t parity);
// test_wait.parity: the same test without suspending (§9.7.13.15.16); a false result yields.
bool mbarrier_test_wait_parity(uint64_t* mbar, uint32_t parity);

// fence.proxy.async.shared::cta (the proxy fence of membar/fence, PTX ISA 9.0): the calling
// thread's generic-proxy shared memory writes so far become visible to the async proxy. With
// LaunchConfig::proxy_fence_check on, an async-proxy read (record_async_smem_access, is_write = false) of a byte whose
// last write came from a thread's generic proxy with no later fence by that thread is reported.
void fence_proxy_async_shared_cta();

}  // namespace fp8attn::emu
