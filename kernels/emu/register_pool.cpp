// Host semantics of setmaxnreg (PTX ISA 9.0, "setmaxnreg"): a warpgroup lowers (.dec) or raises
// (.inc) its threads' register count within the registers its CTA was launched with. .dec
// returns registers to the CTA's pool; .inc takes them from it and waits while the pool has too
// few. Budgets over the launch pool therefore make .inc wait forever: an H200 hung so
// (docs/gpu_runs/gpu_run_h200.md), and here it is reported as a deadlock that names the pool.
// NOTE: counted per thread; the hardware moves registers per warpgroup, which gives the same
// totals. The launch count is the most ptxas can give (cta.cpp); tools/sm90_check_common.sh
// checks the budgets against the count it actually gave.
#include "kernels/emu/cta.hpp"
#include "kernels/emu/runtime.hpp"

#include <string>

namespace fp8attn::emu {

void setmaxnreg(uint32_t registers, bool increase) {
  Cta& cta = current_cta();
  uint32_t& mine = cta.thread_registers(cta.current_thread());
  if (!increase) {
    if (registers > mine)
      fail_in_kernel("setmaxnreg.dec to " + std::to_string(registers) + " registers, above the thread's " +
                     std::to_string(mine));
    cta.free_registers() += mine - registers;
    mine = registers;
    cta.note_progress();
    return;
  }
  if (registers < mine)
    fail_in_kernel("setmaxnreg.inc to " + std::to_string(registers) + " registers, below the thread's " +
                   std::to_string(mine));
  WaitInfo wait;
  wait.kind = WaitInfo::Kind::RegisterPool;
  wait.registers = registers;
  while (cta.free_registers() < registers - mine) cta.yield_now(/*spinning=*/true, wait);
  cta.free_registers() -= registers - mine;
  mine = registers;
}

}  // namespace fp8attn::emu
