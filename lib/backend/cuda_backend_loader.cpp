#include "lib/backend/cuda_backend_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "lib/backend/cuda_backend_abi.hpp"
#include "lib/core/error.hpp"

namespace fp8attn {
namespace {

using EntryFn = const CudaBackendEntry* (*)();
constexpr const char* kEntrySymbol = FP8ATTN_CUDA_BACKEND_ENTRY_SYMBOL;
#define FP8ATTN_STR2(x) #x
#define FP8ATTN_STR(x) FP8ATTN_STR2(x)
constexpr const char* kLibraryName = "libfp8attn_cuda.so." FP8ATTN_STR(FP8ATTN_VERSION_MAJOR);

std::string directory_of_this_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_cuda_backend), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

}  // namespace

std::unique_ptr<Backend> load_cuda_backend(int device_ordinal) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("FP8ATTN_CUDA_BACKEND"); env && *env) candidates.emplace_back(env);
  const std::string dir = directory_of_this_library();
  if (!dir.empty()) candidates.push_back(dir + "/" + kLibraryName);

  std::string tried;
  for (const auto& path : candidates) {
    // NOTE: RTLD_LOCAL keeps cudart's symbols out of the host's namespace.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      tried += "\n  " + path + ": " + (why ? why : "not loadable");
      continue;
    }
    auto entry_fn = reinterpret_cast<EntryFn>(dlsym(handle, kEntrySymbol));
    if (entry_fn == nullptr) {
      tried += "\n  " + path + ": no symbol " + kEntrySymbol;
      dlclose(handle);
      continue;
    }
    const CudaBackendEntry* entry = entry_fn();
    if (entry == nullptr || entry->abi_version != kCudaBackendAbiVersion || entry->create == nullptr) {
      const std::string theirs = entry == nullptr ? std::string("none") : std::to_string(entry->abi_version);
      dlclose(handle);
      // NOTE: a backend of another ABI version is refused outright, not skipped for the next
      // candidate: the caller pointed at it (or installed it next to the core) and must hear why.
      throw Error(FP8ATTN_STATUS_CUDA_BACKEND_MISSING,
                  path + " has CUDA backend ABI version " + theirs + ", but this libfp8attn " +
                      std::to_string(FP8ATTN_VERSION_MAJOR) + "." + std::to_string(FP8ATTN_VERSION_MINOR) +
                      " needs backend ABI version " + std::to_string(kCudaBackendAbiVersion) +
                      "; install the libfp8attn_cuda built with this core");
    }
    fp8attn_error err{sizeof(fp8attn_error), 0, {0}};
    Backend* backend = entry->create(device_ordinal, &err);
    if (backend == nullptr) throw Error(err.status ? err.status : FP8ATTN_STATUS_DEVICE_ERROR, err.message);
    // NOTE: the library stays loaded for the life of the process; unloading cudart while a
    // stream may still reference it is unsafe.
    return std::unique_ptr<Backend>(backend);
  }
  throw Error(FP8ATTN_STATUS_CUDA_BACKEND_MISSING,
              std::string("the CUDA backend library ") + kLibraryName + " could not be loaded; tried:" +
                  (tried.empty() ? std::string("\n  (no candidate path)") : tried));
}

}  // namespace fp8attn
