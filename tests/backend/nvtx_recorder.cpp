// An NVTX injection library for the tests (loaded by NVTX3 from NVTX_INJECTION64_PATH, as a
// profiler would be): it records the names of the ranges pushed with nvtxRangePushA and counts
// the pops. The test reads them back through fp8attn_test_nvtx_ranges().
#include <nvtx3/nvToolsExt.h>  // with nvtxDetail/nvtxTypes.h: the injection interface

#include <mutex>
#include <string>

namespace {

std::mutex g_mutex;
std::string g_ranges;  // one name per line
int g_depth = 0;
int g_pops = 0;

int push_a(const char* name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_ranges += name;
  g_ranges += '\n';
  return g_depth++;
}

int pop() {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_pops;
  return --g_depth;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || size <= NVTX_CBID_CORE_RangePop) return 0;
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&push_a);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  return 1;
}

/// The names pushed so far (one per line), the current depth and the number of pops.
extern "C" __attribute__((visibility("default"))) const char* fp8attn_test_nvtx_ranges(int* depth, int* pops) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *depth = g_depth;
  *pops = g_pops;
  return g_ranges.c_str();
}
