// Counts operator new calls (count and bytes) between start and stop, process-wide.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8attn::test {

struct AllocationCount {
  uint64_t count = 0;
  uint64_t bytes = 0;
};

void start_counting_allocations();
AllocationCount stop_counting_allocations();

}  // namespace fp8attn::test
