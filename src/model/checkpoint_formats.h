#pragma once
// Quantized checkpoints: decoders from the tensors a checkpoint stores for one Linear module to the
// canonical layouts of backend/linear.h, and the check that a checkpoint's quantization tensors and the
// modules the model reads agree. The stored layouts are in research/quant-mtp.md §1; each decoder's
// file cites the library code it follows (gptq_format.cpp, awq_format.cpp,
// compressed_tensors_format.cpp, fp8_format.cpp).

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "model/host_linear.h"
#include "model/quantization_config.h"
#include "model/safetensors.h"

namespace dcu {

// Module `module` (e.g. "model.language_model.layers.3.mlp.gate_proj", its tensors
// "<module>.qweight", ...) stored as `quant` (quantized), decoded to the whole [N, K] matrix. GPTQ and
// compressed-tensors 4-bit give Int4, 8-bit integer formats Int8, FP8 blocks Fp8 (group 128). Shapes
// and dtypes are checked against N and K, and groups must be multiples of 32 dividing K; any mismatch
// throws dcu::Error naming the tensor.
HostLinear decode_quantized_linear(const Checkpoint& ckpt, const std::string& module, const ModuleQuant& quant,
                                   int64_t N, int64_t K);

// An Fp8 matrix requantized to Int8 with one scale per row and group (max |W| / 127), for backends
// whose matmuls read no FP8 (Backend::reads_fp8_weights). Within half an int8 step of every weight.
HostLinear fp8_as_int8(const HostLinear& fp8);

// The k_order decode_quantized_linear gives the module: the input feature of each canonical column, or
// empty when the columns keep their stored order (no act-order g_idx). Reads only the g_idx tensor.
std::vector<int32_t> quantized_input_order(const Checkpoint& ckpt, const std::string& module, const ModuleQuant& quant,
                                           int64_t N, int64_t K);

// Throws dcu::Error unless every module of `consumed_modules` (the Linear modules the model reads)
// that `config` says is quantized has its tensors (a missing scale is named with its module), and
// every quantization tensor of the checkpoint (codes, scales, zero points, g_idx) belongs to such a
// module: a scale nobody reads means a weight would be used without it. Tensors whose names start
// with one of `unread_prefixes` (parts of the checkpoint the model does not read, e.g. "mtp.") are
// left alone.
void check_quantization_tensors(const Checkpoint& ckpt, const QuantizationConfig& config,
                                const std::set<std::string>& consumed_modules,
                                const std::vector<std::string>& unread_prefixes);

}  // namespace dcu
