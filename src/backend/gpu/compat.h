#pragma once
// The one place that knows CUDA from HIP. Host code (plain C++ files) gets the runtime aliases and the
// checked-call macro; device code (.cu, compiled by nvcc or hipcc) also gets WARP_SIZE and the warp
// reductions, written against a *logical* width so the same kernel can run with 64 lanes on a 32-lane
// NVIDIA GPU (two warps joined through shared memory) and be verified there before it meets gfx906.
// A third build, DCUSERVE_EMULATION, runs kernel files on the CPU (emulation.h) as CUDA code of its
// emulated warp width.

#include <cstdint>

#if defined(DCUSERVE_EMULATION)
#include "backend/gpu/emulation.h"
#elif defined(DCUSERVE_HIP)
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#else
#include <hip/hip_runtime_api.h>
#endif
using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuDeviceProp_t = hipDeviceProp_t;
#define gpuSuccess hipSuccess
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuSetDevice hipSetDevice
#define gpuMemGetInfo hipMemGetInfo
#define gpuDeviceCanAccessPeer hipDeviceCanAccessPeer
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuFuncSetAttribute(f, a, v) hipFuncSetAttribute(reinterpret_cast<const void*>(f), a, v)
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
using gpuGraph_t = hipGraph_t;
using gpuGraphExec_t = hipGraphExec_t;
#define gpuStreamBeginCapture hipStreamBeginCapture
#define gpuStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define gpuStreamEndCapture hipStreamEndCapture
#define gpuGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define gpuGraphLaunch hipGraphLaunch
#define gpuGraphDestroy hipGraphDestroy
#define gpuGraphExecDestroy hipGraphExecDestroy
#elif defined(DCUSERVE_CUDA)
#include <cuda_runtime_api.h>
using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuDeviceProp_t = cudaDeviceProp;
#define gpuSuccess cudaSuccess
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuSetDevice cudaSetDevice
#define gpuMemGetInfo cudaMemGetInfo
#define gpuDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuFuncSetAttribute(f, a, v) cudaFuncSetAttribute(f, a, v)
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
using gpuGraph_t = cudaGraph_t;
using gpuGraphExec_t = cudaGraphExec_t;
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphDestroy cudaGraphDestroy
#define gpuGraphExecDestroy cudaGraphExecDestroy
#else
#error "compat.h needs DCUSERVE_CUDA, DCUSERVE_HIP or DCUSERVE_EMULATION"
#endif

namespace dcu::gpu {

// Throws dcu::Error naming the call, file and line (defined in gpu_backend.cpp, outside device code).
[[noreturn]] void fail_call(const char* expr, const char* file, int line, const char* what);

// The wave width the host launches for on this build's targets: gfx9 (gfx906) is wave64 only; NVIDIA is 32.
#if defined(DCUSERVE_EMULATION)
constexpr int kNativeLanes = DCUSERVE_EMULATED_WARP_SIZE;
#elif defined(DCUSERVE_HIP)
constexpr int kNativeLanes = 64;
#else
constexpr int kNativeLanes = 32;
#endif

}  // namespace dcu::gpu

#define GPU_CHECK(expr)                                                                  \
  do {                                                                                   \
    gpuError_t gpu_check_err_ = (expr);                                                  \
    if (gpu_check_err_ != gpuSuccess)                                                    \
      ::dcu::gpu::fail_call(#expr, __FILE__, __LINE__, gpuGetErrorString(gpu_check_err_)); \
  } while (0)
// After every kernel launch: a bad configuration is reported where it happened.
#define GPU_CHECK_LAUNCH() GPU_CHECK(gpuGetLastError())

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(DCUSERVE_EMULATION)

// ---- device side ---------------------------------------------------------------------------------
#if defined(DCUSERVE_CUDA)
#include <cuda_fp16.h>
#endif
#include <type_traits>
#if defined(DCUSERVE_EMULATION)
#define WARP_SIZE DCUSERVE_EMULATED_WARP_SIZE
#elif defined(DCUSERVE_HIP)
#if defined(__HIP_DEVICE_COMPILE__)
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define WARP_SIZE 64
#endif
#if WARP_SIZE != 64
#error "dcuserve's HIP build targets wave64 GPUs (gfx906); build wave32 targets separately"
#endif
#else
#define WARP_SIZE 64
#endif
#else
#define WARP_SIZE 32
#endif

namespace dcu::gpu {

// Sum / max over a logical warp of `Lanes` consecutive threads. Lanes <= WARP_SIZE: shuffles inside the
// physical warp. Lanes == 2 * WARP_SIZE (NVIDIA only, for wave64 verification): each physical warp
// reduces, then the pair exchanges through shared memory behind a named barrier of 64 threads. Every
// thread of the logical warp must call it (no divergence inside a logical warp); blocks of at most
// 512 threads when Lanes == 64 on NVIDIA (named barriers 1..8).
template <int Width, typename Op>
__device__ __forceinline__ float physical_reduce(float v, Op op) {
#pragma unroll
  for (int offset = Width / 2; offset > 0; offset /= 2) {
#if defined(DCUSERVE_HIP)
    v = op(v, __shfl_xor(v, offset, Width));
#else
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset, Width));
#endif
  }
  return v;
}

template <int Lanes, typename Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
  static_assert(Lanes <= 2 * WARP_SIZE && (Lanes & (Lanes - 1)) == 0, "logical warp must be a power of two");
  if constexpr (Lanes <= WARP_SIZE) {
    return physical_reduce<Lanes>(v, op);
  } else {
#if defined(DCUSERVE_HIP)
    static_assert(Lanes <= WARP_SIZE, "virtual warps are an NVIDIA verification aid");
    return v;
#else
    __shared__ float exchange[32];  // one slot per physical warp of the block
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int warp = tid / WARP_SIZE;
    const int barrier = 1 + warp / 2;
    v = physical_reduce<WARP_SIZE>(v, op);
    asm volatile("bar.sync %0, 64;" ::"r"(barrier) : "memory");  // the pair's previous reads are done
    if (tid % WARP_SIZE == 0) exchange[warp] = v;
    asm volatile("bar.sync %0, 64;" ::"r"(barrier) : "memory");
    return op(exchange[warp & ~1], exchange[warp | 1]);
#endif
  }
}

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <int Lanes> __device__ __forceinline__ float warp_sum(float v) { return warp_reduce<Lanes>(v, SumOp{}); }
template <int Lanes> __device__ __forceinline__ float warp_max(float v) { return warp_reduce<Lanes>(v, MaxOp{}); }

// v of lane (lane ^ offset) of the logical warp (offset a power of two below Lanes); every lane of the
// logical warp calls it. On NVIDIA with Lanes == 64, offset 32 crosses the pair's physical warps
// through shared memory.
template <int Lanes>
__device__ __forceinline__ float lane_xor(float v, int offset) {
  constexpr int Width = Lanes < WARP_SIZE ? Lanes : WARP_SIZE;
#if defined(DCUSERVE_HIP)
  static_assert(Lanes <= WARP_SIZE, "virtual warps are an NVIDIA verification aid");
  return __shfl_xor(v, offset, Width);
#else
  if constexpr (Lanes <= WARP_SIZE) {
    return __shfl_xor_sync(0xffffffffu, v, offset, Width);
  } else {
    if (offset < WARP_SIZE) return __shfl_xor_sync(0xffffffffu, v, offset, WARP_SIZE);
    __shared__ float swap[1024];  // one slot per thread of the block
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int barrier = 1 + tid / WARP_SIZE / 2;
    asm volatile("bar.sync %0, 64;" ::"r"(barrier) : "memory");  // the pair's previous reads are done
    swap[tid] = v;
    asm volatile("bar.sync %0, 64;" ::"r"(barrier) : "memory");
    return swap[tid ^ WARP_SIZE];
  }
#endif
}

// Makes the logical warp's shared-memory writes before it visible to its reads after it.
template <int Lanes>
__device__ __forceinline__ void warp_sync() {
#if defined(DCUSERVE_HIP)
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#else
  if constexpr (Lanes <= WARP_SIZE) {
    __syncwarp();
  } else {
    const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    asm volatile("bar.sync %0, 64;" ::"r"(1 + tid / WARP_SIZE / 2) : "memory");
  }
#endif
}

// ---- overlapping a kernel with the one before it (CUDA, sm_90+: programmatic dependent launch) ---
// A kernel launched with launch_overlapping (kernels.h) may start while the kernel before it is still
// running, once every block of that one has called let_next_kernel_start (or exited). It must call
// wait_for_previous_kernel before it reads anything an earlier kernel wrote and before it writes
// anything; only reads of memory no kernel writes (weights) may come before. Elsewhere both are no-ops
// and kernels run one after the other.
__device__ __forceinline__ void let_next_kernel_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// The first statement of a kernel launched with launch_overlapping that has nothing to fetch early.
__device__ __forceinline__ void start_after_previous_kernel() {
  wait_for_previous_kernel();
  let_next_kernel_start();
}
// Starts fetching the cache line holding p into L2 (a read of memory no kernel writes).
__device__ __forceinline__ void prefetch_l2(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
  (void)p;
#endif
}

// Declares `name` as the launch's dynamic shared memory (its smem bytes), an array of T.
#if defined(DCUSERVE_EMULATION)
#define DYNAMIC_SHARED(T, name) T* const name = static_cast<T*>(::dcu::gpu::emulation::dynamic_shared())
#else
#define DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#endif

// Sum over the whole (1-D) block, returned to every thread. blockDim.x must be a multiple of Lanes and
// every thread must call it. `scratch` holds at least blockDim.x / Lanes floats.
template <int Lanes>
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  v = warp_sum<Lanes>(v);
  const int nwarps = blockDim.x / Lanes;
  __syncthreads();  // earlier readers of scratch are done
  if (threadIdx.x % Lanes == 0) scratch[threadIdx.x / Lanes] = v;
  __syncthreads();
  float total = 0.0f;
  for (int i = 0; i < nwarps; ++i) total += scratch[i];
  return total;
}

// ---- element loads: weights and caches are F32, F16 or BF16 (raw uint16_t bits) ------------------
struct Bf16 { uint16_t bits; };
struct F16 { uint16_t bits; };

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(Bf16 x) { return __uint_as_float(uint32_t(x.bits) << 16); }
__device__ __forceinline__ float to_f32(F16 x) {
#if defined(DCUSERVE_HIP)
  return float(__builtin_bit_cast(_Float16, x.bits));
#else
  return __half2float(__ushort_as_half(x.bits));
#endif
}

__device__ __forceinline__ void from_f32(float v, float* dst) { *dst = v; }
__device__ __forceinline__ void from_f32(float v, Bf16* dst) {  // round to nearest even
  uint32_t u = __float_as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) { dst->bits = uint16_t((u >> 16) | 0x40); return; }
  u += 0x7fffu + ((u >> 16) & 1u);
  dst->bits = uint16_t(u >> 16);
}
__device__ __forceinline__ void from_f32(float v, F16* dst) {
#if defined(DCUSERVE_HIP)
  dst->bits = __builtin_bit_cast(uint16_t, _Float16(v));
#else
  dst->bits = __half_as_ushort(__float2half_rn(v));
#endif
}

// A packed pair of 16-bit values (element 0 in the low half) widened to f32.
__device__ __forceinline__ float2 widen_pair(uint32_t u, Bf16) {
  return make_float2(__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u));
}
__device__ __forceinline__ float2 widen_pair(uint32_t u, F16) {
  return make_float2(to_f32(F16{uint16_t(u & 0xffffu)}), to_f32(F16{uint16_t(u >> 16)}));
}

// c + the sum of the four products of the signed bytes of a and b: one dp4a (NVIDIA) or v_dot4_i32_i8
// (gfx906) instruction.
__device__ __forceinline__ int dot4_i8(int a, int b, int c) {
#if defined(DCUSERVE_CUDA)
  return __dp4a(a, b, c);
#elif defined(__gfx906__)
  return __builtin_amdgcn_sdot4(a, b, c, false);
#else
#pragma unroll
  for (int i = 0; i < 4; ++i) c += int(int8_t(a >> (8 * i))) * int(int8_t(b >> (8 * i)));
  return c;
#endif
}

// Runs f(std::integral_constant<int, Lanes>) for the logical warp width chosen at run time. HIP builds
// only instantiate the native 64; CUDA builds instantiate 32 and 64 (virtual warps); the emulation
// its own width.
template <typename F>
void with_lanes(int lanes, F&& f) {
#if defined(DCUSERVE_EMULATION)
  if (lanes == WARP_SIZE) return f(std::integral_constant<int, WARP_SIZE>{});  // no virtual warps
#elif defined(DCUSERVE_HIP)
  if (lanes == 64) return f(std::integral_constant<int, 64>{});
#else
  if (lanes == 32) return f(std::integral_constant<int, 32>{});
  if (lanes == 64) return f(std::integral_constant<int, 64>{});
#endif
  fail_call("with_lanes", __FILE__, __LINE__, "logical warp width not compiled into this build");
}

inline unsigned blocks_for(int64_t n, int threads) { return unsigned((n + threads - 1) / threads); }
// Whether p may be read and written as 16-byte vectors (float4, uint4).
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace dcu::gpu

#endif  // device compilers
