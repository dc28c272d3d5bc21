// The asynchronous side of the emulated wgmma: pending groups per warpgroup, the checks listed
// in wgmma.hpp, and execution at wait_group.
#include <array>
#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/emu/cta.hpp"
#include "kernels/emu/runtime.hpp"
#include "kernels/emu/wgmma.hpp"

namespace fp8attn::emu {
namespace {

std::atomic<arch::MmaAccumulation> g_accumulation{arch::MmaAccumulation::TensorCore};

/// One recorded mma with the accumulator bits each thread held when it was issued. RS form:
/// op.a_registers is the issue-time copy the mma runs on; a_sources points at each thread's
/// fragment in the kernel, compared with that copy at the covering wait.
struct PendingMma {
  WgmmaOperation op;
  std::vector<float> snapshot;  // 128 x n/2, thread-major
  std::array<const uint32_t*, arch::kWarpgroupThreads> a_sources{};
};

struct WarpgroupMmaState {
  std::vector<std::shared_ptr<PendingMma>> uncommitted;
  std::deque<std::vector<std::shared_ptr<PendingMma>>> groups;  // oldest first
  bool fenced = false;  // a wgmma.fence since the last wait_group (or since the start)
};

/// The calling thread's warpgroup's state, held by its CTA (dropped when the CTA starts).
WarpgroupMmaState& warpgroup_state() {
  Cta& cta = current_cta();
  auto& slot = cta.wgmma_state();
  if (!slot) slot = std::make_shared<std::vector<WarpgroupMmaState>>((cta.thread_count() + 127) / 128);
  return (*static_cast<std::vector<WarpgroupMmaState>*>(slot.get()))[this_thread().warpgroup];
}

[[noreturn]] void fail(const std::string& what) {
  const ThreadContext& self = this_thread();
  std::ostringstream s;
  s << "wgmma: CTA " << self.linear_cta << " warpgroup " << self.warpgroup << ": " << what;
  throw KernelError(s.str());
}

/// Reads operand bytes from the CTA's shared memory (the .shared address is the offset from the
/// base of the dynamic shared memory, which is where the arch layer's smem_address() counts from).
const uint8_t* smem_bytes(uint32_t address, uint32_t bytes) {
  if (static_cast<size_t>(address) + bytes > dynamic_smem_size()) {
    std::ostringstream s;
    s << "operand byte at .shared address " << address << " is outside the CTA's " << dynamic_smem_size()
      << " bytes of shared memory";
    fail(s.str());
  }
  return static_cast<const uint8_t*>(dynamic_smem()) + address;
}

/// The operand's wavefronts when the launch counts them (bank_conflicts.hpp): one phase per core
/// matrix of 8 rows x 16 bytes, on the warpgroup's first warp.
void count_operand_wavefronts(const arch::WgmmaDescriptorFields& f, OperandMajor major, uint32_t e, int k_len, int rows) {
  SmemTrafficRecorder* traffic = current_cta().traffic();
  if (traffic == nullptr) return;
  SmemWavefronts sum;
  uint32_t offsets[32] = {};
  if (major == OperandMajor::K) {
    // K-major: rows r0..r0+7 of one 16-byte chunk of K.
    for (int chunk = 0; chunk < 2; ++chunk)
      for (int r0 = 0; r0 < rows; r0 += 8) {
        for (int r = 0; r < 8; ++r) offsets[r] = wgmma_operand_address(f, major, e, r0 + r, chunk * (16 / e));
        sum += warp_access_wavefronts(offsets, 0xffu, 16);
      }
  } else {
    // MN-major: 16 bytes along MN (16 / e rows) at each of 8 consecutive k.
    for (int k0 = 0; k0 < k_len; k0 += 8)
      for (int r0 = 0; r0 < rows; r0 += static_cast<int>(16 / e)) {
        for (int k = 0; k < 8; ++k) offsets[k] = wgmma_operand_address(f, major, e, r0, k0 + k);
        sum += warp_access_wavefronts(offsets, 0xffu, 16);
      }
  }
  sum.instructions = 1;
  traffic->add(this_thread().warpgroup * 4, SmemPath::Tensor, sum);
}

/// Records the operand's shared-memory reads as async-proxy accesses of the calling thread
/// (ordered for other threads by wait_group: PTX ISA 9.0 §9.7.15.7.3).
void record_operand_reads(uint64_t desc, OperandMajor major, MmaInputType type, int rows) {
  const auto f = arch::decode_wgmma_descriptor(desc);
  const uint32_t e = mma_input_bytes(type);
  const int k_len = mma_instruction_k(type);
  count_operand_wavefronts(f, major, e, k_len, rows);
  std::vector<AsyncSmemRange> ranges;
  if (major == OperandMajor::K) {
    // A row's K elements sit in two 16-byte chunks, each contiguous under every swizzle.
    for (int r = 0; r < rows; ++r)
      for (int chunk = 0; chunk < 2; ++chunk) {
        const uint32_t a = wgmma_operand_address(f, major, e, r, chunk * (16 / e));
        ranges.push_back({smem_bytes(a, 16), 16});
      }
  } else {
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < k_len; ++k) {
        const uint32_t a = wgmma_operand_address(f, major, e, r, k);
        ranges.push_back({smem_bytes(a, e), e});
      }
  }
  record_async_smem_accesses(ranges, false, nullptr);
}

std::vector<float> snapshot_accumulators(const WgmmaOperation& op) {
  const int regs = op.n / 2;
  std::vector<float> s(static_cast<size_t>(arch::kWarpgroupThreads) * regs);
  for (int t = 0; t < arch::kWarpgroupThreads; ++t) std::memcpy(&s[t * regs], op.accumulators[t], regs * sizeof(float));
  return s;
}

void check_snapshot(const PendingMma& p) {
  const int regs = p.op.n / 2;
  for (int t = 0; t < arch::kWarpgroupThreads; ++t)
    if (std::memcmp(&p.snapshot[t * regs], p.op.accumulators[t], regs * sizeof(float)) != 0) {
      for (int i = 0; i < regs; ++i)
        if (std::memcmp(&p.snapshot[t * regs + i], &p.op.accumulators[t][i], sizeof(float)) != 0) {
          std::ostringstream s;
          s << "thread " << t << " of the warpgroup changed accumulator register " << i
            << " of a pending wgmma.mma_async before the wgmma.wait_group covering it (PTX ISA 9.0 §9.7.15.7.3)";
          fail(s.str());
        }
    }
}

/// RS form: the kernel's A fragment must still hold what it held at issue (PTX ISA 9.0
/// §9.7.15.7.3: the registers must not be modified until the covering wait completes).
void check_a_registers(const PendingMma& p) {
  if (!p.op.a_from_registers) return;
  for (int t = 0; t < arch::kWarpgroupThreads; ++t)
    for (int r = 0; r < 4; ++r)
      if (p.a_sources[t][r] != p.op.a_registers[t][r]) {
        std::ostringstream s;
        s << "thread " << t << " of the warpgroup rewrote A register " << r << " (0x" << std::hex
          << p.op.a_registers[t][r] << " at issue, now 0x" << p.a_sources[t][r] << std::dec
          << ") of a pending RS-form wgmma.mma_async before the wgmma.wait_group covering it (PTX ISA 9.0 "
             "§9.7.15.7.3: undefined behaviour; the hardware may read either value)";
        fail(s.str());
      }
}

/// The accumulator model of one mma: the launch's, else the process-wide one. The rule itself
/// then depends on the operation's input formats (mma_order.hpp).
arch::MmaPrecisionModel model_for(const WgmmaOperation&) {
  const auto& launch_model = current_cta().config().mma_model;
  return launch_model ? *launch_model : wgmma_precision_model();
}

/// Runs one group's mmas in issue order, then refreshes the snapshots of later mmas on the same
/// accumulators (their legitimate old value has just changed).
void retire_group(WarpgroupMmaState& state, std::vector<std::shared_ptr<PendingMma>>& group) {
  for (auto& pending : group) {
    check_snapshot(*pending);
    check_a_registers(*pending);
    execute_wgmma(pending->op, smem_bytes, model_for(pending->op));
    auto refresh = [&](std::vector<std::shared_ptr<PendingMma>>& later) {
      for (auto& p : later)
        if (p != pending && p->op.accumulators[0] == pending->op.accumulators[0]) p->snapshot = snapshot_accumulators(p->op);
    };
    refresh(group);
    for (auto& g : state.groups) refresh(g);
    refresh(state.uncommitted);
  }
}

WgmmaOperation gather_operation(std::span<void* const> members, PendingMma& pending) {
  const auto& first = *static_cast<const WgmmaIssue*>(members[0]);
  WgmmaOperation op;
  op.n = first.n;
  op.type_a = op.type_b = first.type;
  op.a_from_registers = first.a_from_registers;
  op.major_a = first.major_a;
  op.major_b = first.major_b;
  op.scale_d = first.scale_d;
  op.desc_a = first.desc_a;
  op.desc_b = first.desc_b;
  for (size_t t = 0; t < members.size(); ++t) {
    const auto& m = *static_cast<const WgmmaIssue*>(members[t]);
    // PTX ISA 9.0 §9.7.15.5.2: the descriptors "must be same across all the warps in the
    // warpgroup"; .aligned makes every other operand uniform as well.
    if (m.n != first.n || m.type != first.type || m.a_from_registers != first.a_from_registers ||
        m.major_a != first.major_a || m.major_b != first.major_b || m.scale_d != first.scale_d ||
        (!first.a_from_registers && m.desc_a != first.desc_a) || m.desc_b != first.desc_b)
      fail("thread " + std::to_string(t) + " issued a wgmma.mma_async whose shape, types, descriptors or scale-d "
           "differ from thread 0's (PTX ISA 9.0 §9.7.15.5.2)");
    if (m.a_from_registers) {
      for (int r = 0; r < 4; ++r) op.a_registers[t][r] = m.a_registers[r];
      pending.a_sources[t] = m.a_registers;
    }
    op.accumulators[t] = m.accumulators;
  }
  return op;
}

}  // namespace

void set_wgmma_precision_model(arch::MmaPrecisionModel model) { g_accumulation = model.accumulation; }

arch::MmaPrecisionModel wgmma_precision_model() { return arch::MmaPrecisionModel{g_accumulation.load()}; }

void wgmma_mma_async(const WgmmaIssue& issue) {
  WgmmaIssue mine = issue;
  collective(Group::Warpgroup, &mine, [](std::span<void* const> members) {
    WarpgroupMmaState& state = warpgroup_state();
    if (!state.fenced)
      fail("wgmma.mma_async issued without a wgmma.fence since the warpgroup's last wgmma.wait_group "
           "(PTX ISA 9.0 §9.7.15.7.1)");
    auto pending = std::make_shared<PendingMma>();
    pending->op = gather_operation(members, *pending);
    try {
      validate_wgmma_operation(pending->op);
    } catch (const std::invalid_argument& e) {
      fail(e.what());
    }
    if (!pending->op.a_from_registers) record_operand_reads(pending->op.desc_a, pending->op.major_a, pending->op.type_a, arch::kWgmmaM);
    record_operand_reads(pending->op.desc_b, pending->op.major_b, pending->op.type_b, pending->op.n);
    pending->snapshot = snapshot_accumulators(pending->op);
    state.uncommitted.push_back(std::move(pending));
  });
}

void wgmma_fence() {
  int unused = 0;
  collective(Group::Warpgroup, &unused, [](std::span<void* const>) {
    WarpgroupMmaState& state = warpgroup_state();
    state.fenced = true;
  });
}

void wgmma_commit_group() {
  int unused = 0;
  collective(Group::Warpgroup, &unused, [](std::span<void* const>) {
    WarpgroupMmaState& state = warpgroup_state();
    state.groups.push_back(std::move(state.uncommitted));  // an empty group is legal (§9.7.15.7.2)
    state.uncommitted.clear();
  });
}

void wgmma_wait_group(int pending) {
  int unused = 0;
  collective(Group::Warpgroup, &unused, [pending](std::span<void* const>) {
    WarpgroupMmaState& state = warpgroup_state();
    while (static_cast<int>(state.groups.size()) > pending) {
      auto group = std::move(state.groups.front());
      state.groups.pop_front();
      retire_group(state, group);
    }
    state.fenced = false;
  });
  // The completed mmas' shared-memory reads happen-before this thread's later accesses.
  acquire_async_accesses(Group::Warpgroup);
}

}  // namespace fp8attn::emu
