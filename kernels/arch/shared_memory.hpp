// Dynamic shared memory: the only way kernel code gets shared memory (DESIGN.md §1: no
// __shared__ variables, so each emulated CTA gets its own). Loads and stores through smem_load /
// smem_store are bounds-checked and race-checked by the emulator; plain pointer accesses are not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arch/platform.hpp"

#if !FP8ATTN_DEVICE_BUILD
#include "kernels/emu/source_site.hpp"
#endif

namespace fp8attn::arch {

#if FP8ATTN_DEVICE_BUILD
// NOTE: 1024-byte alignment: the 128-byte swizzle repeats every 1024 bytes and TMA / wgmma tiles
// must start on that period for base offset 0 (PTX ISA 9.0 §5.5.7, PTX_FACTS.md §4).
extern __shared__ __align__(1024) unsigned char fp8attn_dynamic_smem[];
#endif

// Base of the CTA's dynamic shared memory (1024-byte aligned in both builds).
template <class T = unsigned char>
FP8ATTN_ARCH_FN T* dynamic_smem() {
#if FP8ATTN_DEVICE_BUILD
  return reinterpret_cast<T*>(fp8attn_dynamic_smem);
#else
  return static_cast<T*>(emu::dynamic_smem());
#endif
}

// Bytes of dynamic shared memory given at launch (the special register %dynamic_smem_size,
// PTX ISA 9.0).
FP8ATTN_ARCH_FN uint32_t dynamic_smem_size() {
#if FP8ATTN_DEVICE_BUILD
  uint32_t size;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(size));
  return size;
#else
  return static_cast<uint32_t>(emu::dynamic_smem_size());
#endif
}

// The .shared state-space address of p (what PTX instructions and descriptors take). On the
// emulator it is p's offset in the CTA's dynamic shared memory, bounds-checked.
FP8ATTN_ARCH_FN uint32_t smem_address(const void* p) {
#if FP8ATTN_DEVICE_BUILD
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
#else
  emu::check_smem_access(p, 0, /*is_write=*/false);
  return static_cast<uint32_t>(static_cast<const unsigned char*>(p) -
                               static_cast<const unsigned char*>(emu::dynamic_smem()));
#endif
}

// NOTE: the emulator build takes the caller's source location, so that the emulator can group the
// lanes of one load or store instruction when it counts bank conflicts (kernels/emu/bank_conflicts.hpp).
#if FP8ATTN_DEVICE_BUILD
#define FP8ATTN_SMEM_SITE
#else
#define FP8ATTN_SMEM_SITE , const emu::SourceSite& site = emu::SourceSite::current()
#endif

template <class T>
FP8ATTN_ARCH_FN T smem_load(const T* p FP8ATTN_SMEM_SITE) {
#if FP8ATTN_DEVICE_BUILD
  return *p;
#else
  emu::check_smem_access(p, sizeof(T), /*is_write=*/false, site);
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
#endif
}

template <class T>
FP8ATTN_ARCH_FN void smem_store(T* p, const T& value FP8ATTN_SMEM_SITE) {
#if FP8ATTN_DEVICE_BUILD
  *p = value;
#else
  emu::check_smem_access(p, sizeof(T), /*is_write=*/true, site);
  std::memcpy(p, &value, sizeof(T));
#endif
}

#undef FP8ATTN_SMEM_SITE

}  // namespace fp8attn::arch
