// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven, for the scale-state blob.
// NOTE: CRC32C rather than CRC32: it detects every burst of up to 32 bits, so every single-byte
// corruption of a blob is caught, and it is the checksum of iSCSI, ext4 and Protocol Buffers'
// record formats. Check value: crc32c("123456789") = 0xE3069283 (RFC 3720, B.4).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8attn {

/// CRC32C of `size` bytes, continuing from `crc` (0 for a fresh checksum).
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace fp8attn
