#pragma once
// How the weight loader reads the matrices a quantized checkpoint ships quantized: each module is
// decoded whole (model/checkpoint_formats.h), then cut to one tensor-parallel rank's rows and columns.
// A column slice must keep every quantization group on one rank: a group's scale (and zero point)
// applies to all of its inputs, and a rank holding part of them would need a scale it does not have.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/host_linear.h"
#include "model/quantization_config.h"
#include "model/safetensors.h"
#include "model/weight_slice.h"

namespace dcu {

// One matrix of the model that the checkpoint stores quantized, as one rank reads it.
struct QuantizedMatrix {
  std::string tensor;  // the model's name for it, e.g. "layers.0.mlp.down_proj.weight"
  std::string module;  // the checkpoint's module, e.g. "model.language_model.layers.0.mlp.down_proj"
  ModuleQuant quant;
  int64_t N = 0, K = 0;  // the whole matrix
  Slice slice;           // this rank's part
  // Act-order (a k_order): the rows that produce its inputs were put in its canonical column order
  // (an MLP's gate and up rows, in down_proj's order), so it reads its inputs as they come, and a rank
  // takes whole groups of canonical columns.
  bool inputs_in_group_order = false;
};

// The bytes of each module's tensors ("<module>.<suffix>" summed by <module>): what decoding it reads.
std::map<std::string, size_t> module_bytes(const Checkpoint& ckpt);

// Fails unless every column slice of `matrices` starts and ends on a group boundary, naming the tensor,
// its groups and the tensor-parallel sizes of `config` whose slices keep every group whole.
void check_group_alignment(const std::vector<QuantizedMatrix>& matrices, const ModelConfig& config, int tp_size);

// `m` decoded and cut to its slice. Act-order weights (a g_idx that permutes the input features) keep
// their column order (Linear::k_order); when ranks split their input features (and the rows that
// produce them were not put in their order), a rank's columns are requantized to int8 (*requantized
// says so when given).
HostLinear load_quantized_matrix(const Checkpoint& ckpt, const QuantizedMatrix& m, bool* requantized = nullptr);

}  // namespace dcu
