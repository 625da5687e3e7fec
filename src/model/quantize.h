#pragma once
// Load-time quantization of a 16-bit checkpoint's matrices (--quantization int8 | int4 | fp8): symmetric
// round-to-nearest with one f32 scale per kQuantGroup consecutive k of a row: int8 absmax / 127,
// int4 absmax / 7 (codes q + 8 in 0..15), fp8 absmax / 448 (the nearest E4M3, ties to even; backends
// that read no FP8 get int8 instead). research/quant-mtp.md §5(b) gives the reasons. int8 with
// one scale per row (the brief's first choice) changed one of the demo model's six greedy reference
// answers (a top-2 gap of 0.09 flipped); groups of 128 keep all six, for 3 % more bytes.

#include <functional>
#include <string>
#include <string_view>

#include "backend/backend.h"
#include "model/config.h"
#include "model/host_linear.h"
#include "model/quantization_config.h"

namespace dcu {

constexpr int64_t kQuantGroup = 128;

// What --quantization asks of the matrices a checkpoint stores in 16 bits, given the quant_method of
// its quantization_config (`checkpoint`; None for a 16-bit checkpoint or random weights). The flag is
// vLLM's, which names the checkpoint's method and is checked against it, extended with dcuserve's
// load-time quantization:
//   none (or empty)   the checkpoint as stored: 16-bit matrices stay 16-bit, quantized ones as shipped;
//   int8 | int4       16-bit matrices quantized while loading (except keeps_16_bit ones); on a quantized
//                     checkpoint the shipped ones load as shipped (the issue's --quantize-rest);
//   gptq, gptq_marlin, awq, awq_marlin, compressed-tensors, fp8
//                     the checkpoint as shipped, which must be of that method (a marlin name is vLLM's
//                     kernel choice for its base format); on a 16-bit checkpoint an error, except fp8,
//                     which there quantizes the 16-bit matrices to FP8 while loading (as vLLM does).
// Returns the format of the 16-bit matrices; throws dcu::Error naming the flag and the checkpoint's
// method when they disagree, and for unknown values.
WeightFormat load_time_quantization(const std::string& flag, QuantMethod checkpoint = QuantMethod::None);

// The format load-time quantization to `format` stores on `backend`: Int8 for Fp8 where the matmuls read
// no FP8 (Backend::reads_fp8_weights), else `format`.
WeightFormat stored_format(WeightFormat format, const Backend& backend);

// Bytes the text model's weights take in `format`: the embedding in 16 bits, every matrix in the
// format (a quantized tied lm_head as its own copy), norms and gates as stored (approximated).
double weight_bytes(const ModelConfig& config, WeightFormat format);

// An empty HostLinear of `format` for an [N, K] matrix, buffers sized, in groups of kQuantGroup k (64
// or 32 when K is not a multiple of 128). Throws dcu::Error naming `what` when K is not a multiple of 32.
HostLinear make_host_linear(WeightFormat format, int64_t N, int64_t K, std::string_view what);

// Quantizes `count` rows of K values of `dtype` (F32, BF16 or F16) into rows [row0, row0 + count) of
// `out`.
void quantize_rows(const void* rows, DType dtype, int64_t row0, int64_t count, HostLinear& out);

// Whether load-time quantization leaves a matrix in 16 bits: the GDN gate projections in_proj_a/b
// (they feed exp and sigmoid, and are 0.1 % of the bytes), as every published format does.
bool keeps_16_bit(std::string_view tensor_name);

// The Linear that reads `host` in place (host memory: the CPU backend).
Linear linear_view(const HostLinear& host);

// Copies `host` into backend memory from `allocate` and returns the Linear viewing it.
Linear upload_linear(const HostLinear& host, Backend& backend, const std::function<void*(size_t)>& allocate);

}  // namespace dcu
