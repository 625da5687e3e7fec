#pragma once
// The kernel self-test's results (doctor/self_test.h) as checks.

#include "doctor/check.h"
#include "doctor/self_test.h"

namespace dcu::doctor {

// "gpu i kernels": every op and the tiny model within tolerance of the CPU, else fail naming the ops.
Check check_kernels(int index, const SelfTest& t);
// "cpu model": the CPU smoke test.
Check check_cpu_smoke(const SelfTest& t);

}  // namespace dcu::doctor
