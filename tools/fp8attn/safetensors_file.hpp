// A read-only view of a .safetensors file: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the tensor
// bytes. The file is memory-mapped; the header is parsed with nlohmann-json and every entry's
// offsets and size are checked against the file before use. Header-only: it is linked into the
// command-line tool alone.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fp8attn::tools {

struct SafetensorsEntry {
  std::string dtype;  // "F32", "BF16", "F16", "F8_E4M3", ...
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t bytes = 0;
};

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY);
    if (fd_ < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(path, "cannot stat");
    size_ = static_cast<size_t>(st.st_size);
    if (size_ < 8) fail(path, "shorter than the 8-byte header length");
    void* map = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (map == MAP_FAILED) fail(path, "cannot mmap");
    base_ = static_cast<const uint8_t*>(map);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | base_[i];
    if (header_len > size_ - 8) fail(path, "header length " + std::to_string(header_len) + " runs past the file");
    const nlohmann::json header = nlohmann::json::parse(base_ + 8, base_ + 8 + header_len);
    const size_t data_start = 8 + static_cast<size_t>(header_len);
    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") continue;
      SafetensorsEntry e;
      e.dtype = value.at("dtype").get<std::string>();
      e.shape = value.at("shape").get<std::vector<int64_t>>();
      const auto offsets = value.at("data_offsets").get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > size_ - data_start)
        fail(path, "tensor " + name + " has data offsets outside the file");
      e.data = base_ + data_start + offsets[0];
      e.bytes = static_cast<size_t>(offsets[1] - offsets[0]);
      entries_.emplace(name, std::move(e));
    }
  }
  ~SafetensorsFile() {
    if (base_ != nullptr) ::munmap(const_cast<uint8_t*>(base_), size_);
    if (fd_ >= 0) ::close(fd_);
  }
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  const SafetensorsEntry* find(const std::string& name) const {
    const auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& why) {
    if (base_ != nullptr) ::munmap(const_cast<uint8_t*>(base_), size_);
    if (fd_ >= 0) ::close(fd_);
    base_ = nullptr;
    fd_ = -1;
    throw std::runtime_error(path + ": " + why);
  }

  int fd_ = -1;
  size_t size_ = 0;
  const uint8_t* base_ = nullptr;
  std::map<std::string, SafetensorsEntry> entries_;
};

}  // namespace fp8attn::tools
