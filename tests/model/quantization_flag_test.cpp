// --quantization against the checkpoint's quant_method (model/quantize.h load_time_quantization): vLLM's
// method names must match the checkpoint (fp8 also quantizes a 16-bit one), int8 / int4 quantize what is
// stored in 16 bits, anything else is an error that says what would work.

#include <gtest/gtest.h>

#include "core/error.h"
#include "model/quantize.h"

namespace dcu {
namespace {

std::string error_of(const std::string& flag, QuantMethod checkpoint) {
  try {
    load_time_quantization(flag, checkpoint);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(QuantizationFlag, SixteenBitCheckpoint) {
  EXPECT_EQ(load_time_quantization("none"), WeightFormat::Dense);
  EXPECT_EQ(load_time_quantization(""), WeightFormat::Dense);
  EXPECT_EQ(load_time_quantization("int8"), WeightFormat::Int8);
  EXPECT_EQ(load_time_quantization("int4"), WeightFormat::Int4);
  EXPECT_EQ(load_time_quantization("fp8"), WeightFormat::Fp8);  // vLLM's FP8 of a 16-bit checkpoint
  for (const char* method : {"gptq", "gptq_marlin", "awq", "awq_marlin", "compressed-tensors"})
    EXPECT_NE(error_of(method, QuantMethod::None)
                  .find(std::string("--quantization ") + method +
                        ": the checkpoint is not quantized (its config.json has no quantization_config); use int8, "
                        "int4 or fp8 to quantize it while loading"),
              std::string::npos)
        << method;
}

TEST(QuantizationFlag, QuantizedCheckpointLoadsAsShippedAndInt8Or4QuantizesTheRest) {
  struct Case {
    const char* flag;
    QuantMethod checkpoint;
  };
  for (Case c : {Case{"none", QuantMethod::Gptq}, Case{"gptq", QuantMethod::Gptq}, Case{"gptq_marlin", QuantMethod::Gptq},
                 Case{"awq", QuantMethod::Awq}, Case{"awq_marlin", QuantMethod::Awq},
                 Case{"compressed-tensors", QuantMethod::CompressedTensors}, Case{"fp8", QuantMethod::Fp8}})
    EXPECT_EQ(load_time_quantization(c.flag, c.checkpoint), WeightFormat::Dense) << c.flag;
  EXPECT_EQ(load_time_quantization("int8", QuantMethod::Gptq), WeightFormat::Int8);
  EXPECT_EQ(load_time_quantization("int4", QuantMethod::Fp8), WeightFormat::Int4);
}

TEST(QuantizationFlag, MethodThatDisagreesWithTheCheckpoint) {
  EXPECT_NE(error_of("awq_marlin", QuantMethod::Gptq)
                .find("--quantization awq_marlin does not match the checkpoint, whose quantization_config says "
                      "quant_method \"gptq\"; leave --quantization out (or none) to load it as shipped, or pass gptq"),
            std::string::npos);
  EXPECT_NE(error_of("fp8", QuantMethod::CompressedTensors).find("quant_method \"compressed-tensors\""),
            std::string::npos);
}

TEST(QuantizationFlag, UnknownValue) {
  EXPECT_NE(error_of("int3", QuantMethod::None).find("--quantization int3 is not supported; use none, int8, int4 or fp8"),
            std::string::npos);
  EXPECT_NE(error_of("bitsandbytes", QuantMethod::Gptq).find("gptq, gptq_marlin, awq, awq_marlin, compressed-tensors, fp8"),
            std::string::npos);
}

}  // namespace
}  // namespace dcu
