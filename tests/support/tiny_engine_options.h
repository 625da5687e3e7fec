#pragma once
// Test support: engine options for the tiny fixture on simulated CPU ranks, small enough that prompts
// are prefilled in chunks mixed with decodes.

#include <string>

#include "engine/engine_factory.h"

namespace dcu::testing {

inline const std::string kTinyModel = "tests/data/tiny-qwen35";

inline EngineOptions tiny_engine_options(int tensor_parallel_size) {
  EngineOptions o;
  o.model_dir = kTinyModel;
  o.device = "cpu";
  o.tensor_parallel_size = tensor_parallel_size;
  o.max_model_len = 256;
  o.max_num_seqs = 8;
  o.max_num_batched_tokens = 64;  // prompts are prefilled in chunks, mixed with decodes
  return o;
}

}  // namespace dcu::testing
