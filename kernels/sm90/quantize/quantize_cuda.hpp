// The sm_90a build of the quantizer kernels: launches both passes on a stream. Device pointers
// throughout; nothing is synchronized or allocated.
#pragma once

#include <string>

#include "kernels/sm90/quantize/quantize_params.hpp"

struct CUstream_st;

namespace fp8attn::sm90::quant {

/// Enqueues both kernels on `stream`; "" on success, else why not (a refused problem or a
/// launch error). p.unit_amax must be device memory of batch·heads·units_per_head floats.
/// A NaN or infinite input makes the affected descales infinite: the device path cannot refuse
/// after the amax pass without synchronizing, so callers check the reported amax.
std::string run_quantize_cuda(const QuantizeParams& p, CUstream_st* stream);

}  // namespace fp8attn::sm90::quant
