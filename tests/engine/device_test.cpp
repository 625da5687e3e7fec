// GPU start-up errors: the cache budget from the two memory queries (a clear error when they disagree
// or nothing is left) and the hint to run `dcuserve doctor` that device start-up failures end with.

#include <gtest/gtest.h>

#include "backend/gpu_backend_api.h"
#include "engine/device.h"
#include "engine/engine_factory.h"
#include "support/tiny_engine_options.h"

namespace dcu {
namespace {

GpuDeviceInfo gpu(size_t total_gib, size_t free_gib) {
  GpuDeviceInfo g;
  g.index = 2;
  g.name = "Z100";
  g.arch = "gfx906";
  g.total_memory = total_gib << 30;
  g.free_memory = free_gib << 30;
  return g;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GpuCacheBudget, WhatUtilizationLeavesAfterWeightsAndScratch) {
  // 32 GiB at 0.9: 28.8 GiB usable; 12 GiB in use (weights) and 1 GiB of scratch leave 15.8 GiB.
  const size_t budget = gpu_cache_budget(gpu(32, 20), 0.9, size_t(1) << 30);
  EXPECT_NEAR(double(budget) / double(1ull << 30), 15.8, 1e-6);
}

TEST(GpuCacheBudget, DisagreeingMemoryQueriesAreAClearError) {
  GpuDeviceInfo g = gpu(32, 20);
  g.memory_problem = "hipMemGetInfo reports 16.00 GiB total but the device properties 32.00 GiB (totalGlobalMem)";
  const std::string e = error_of([&] { gpu_cache_budget(g, 0.9, 0); });
  EXPECT_NE(e.find("GPU 2 (Z100): hipMemGetInfo reports 16.00 GiB"), std::string::npos) << e;
  EXPECT_NE(e.find("--kv-cache-memory-bytes"), std::string::npos) << e;
}

TEST(GpuCacheBudget, NothingLeftIsAnErrorNotANegativeBudget) {
  const std::string e = error_of([] { gpu_cache_budget(gpu(32, 2), 0.9, 0); });  // 30 GiB in use of 28.8 usable
  EXPECT_NE(e.find("--gpu-memory-utilization 0.9 allows"), std::string::npos) << e;
  EXPECT_NE(error_of([] { gpu_cache_budget(gpu(32, 20), 0.3, 0); }), "");
}

TEST(DoctorHint, DeviceStartUpErrorsEndWithItOnce) {
  const std::string e = error_of([] { with_doctor_hint([]() -> int { fail("librccl.so.1 could not be loaded"); }); });
  EXPECT_EQ(e, std::string("librccl.so.1 could not be loaded\n") + kDoctorHint);
  const std::string twice =
      error_of([] { with_doctor_hint([] { with_doctor_hint([]() -> int { fail("no GPU"); }); }); });
  EXPECT_EQ(twice, std::string("no GPU\n") + kDoctorHint);
  EXPECT_EQ(with_doctor_hint([] { return 7; }), 7);
}

TEST(DoctorHint, TheEngineAddsItToGpuStartUpFailuresOnly) {
  if (!list_gpu_devices().empty()) GTEST_SKIP() << "a GPU is present: --device cuda starts";
  EngineOptions o = testing::tiny_engine_options(1);
  o.device = "cuda";
  const std::string gpu_failure = error_of([&] { create_engine(o); });
  EXPECT_NE(gpu_failure.find(gpu_backend_compiled() ? "GPU 0 requested but 0 found" : "this build has no GPU backend"),
            std::string::npos)
      << gpu_failure;
  EXPECT_TRUE(gpu_failure.ends_with(kDoctorHint)) << gpu_failure;
  o.dtype = "float64";  // a flag error is no device failure
  const std::string flag = error_of([&] { create_engine(o); });
  EXPECT_NE(flag.find("--dtype"), std::string::npos) << flag;
  EXPECT_EQ(flag.find("doctor"), std::string::npos) << flag;
}

// --kv-cache-dtype: int8 and vLLM's fp8 names give the 8-bit cache everywhere; auto follows the backend
// and --dtype; any other name is an error that lists the choices.
TEST(KvCacheDtype, FollowsTheFlagTheBackendAndTheDtype) {
  for (const char* name : {"int8", "fp8", "fp8_e4m3"}) {
    EXPECT_EQ(kv_cache_dtype(DeviceKind::Cpu, "auto", name), DType::I8) << name;
    EXPECT_EQ(kv_cache_dtype(DeviceKind::Hip, "bfloat16", name), DType::I8) << name;
  }
  EXPECT_EQ(kv_cache_dtype(DeviceKind::Cpu, "auto", "auto"), DType::F32);
  EXPECT_EQ(kv_cache_dtype(DeviceKind::Cuda, "float32", "auto"), DType::F32);
  EXPECT_EQ(kv_cache_dtype(DeviceKind::Cuda, "float16", "auto"), DType::F16);
  EXPECT_EQ(kv_cache_dtype(DeviceKind::Hip, "auto", "auto"), DType::BF16);
  EXPECT_NE(error_of([] { kv_cache_dtype(DeviceKind::Cuda, "auto", "fp16"); }).find("choose auto or int8"),
            std::string::npos);
}

// --activation-quantization: auto rounds quantized matmuls' activations on GPUs only; int8 and none
// decide everywhere; another name is an error that lists the choices.
TEST(ActivationQuantization, AutoIsInt8OnGpusAndTheFlagDecidesElsewhere) {
  EXPECT_FALSE(int8_activations(DeviceKind::Cpu, "auto"));
  EXPECT_TRUE(int8_activations(DeviceKind::Cuda, "auto"));
  EXPECT_TRUE(int8_activations(DeviceKind::Hip, "auto"));
  EXPECT_TRUE(int8_activations(DeviceKind::Cpu, "int8"));
  EXPECT_FALSE(int8_activations(DeviceKind::Hip, "none"));
  BackendFlags flags;
  flags.activation_quantization = "int4";
  EXPECT_NE(error_of([&] { check_backend_flags(flags); }).find("choose auto, int8 or none"), std::string::npos);
  flags.activation_quantization = "int8";
  EXPECT_NO_THROW(check_backend_flags(flags));
}

}  // namespace
}  // namespace dcu
