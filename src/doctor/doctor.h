#pragma once
// `dcuserve doctor`: every check, in order: the CPU; the GPU libraries this build loads (and, on HIP
// builds with RCCL, the rocm_smi order DTK images need); each GPU (architecture, memory, code in this
// binary, copy bandwidth, kernel self-test); each pair of GPUs and, beyond two, all of them together
// (peer access, all-reduce latency and bandwidth); and a CPU model smoke test. Without a usable GPU
// the GPU checks give way to one line saying why.

#include <string>

#include "doctor/check.h"
#include "doctor/probes.h"

namespace dcu::doctor {

Checks run_doctor(const DoctorProbes& probes);

// "CUDA build for 80, 90a with cuBLAS and NCCL", "CPU-only build".
std::string describe_build(const BuildFacts& build);

}  // namespace dcu::doctor
