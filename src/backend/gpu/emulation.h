#pragma once
// The GPU kernel language emulated on the CPU (builds with DCUSERVE_EMULATION, from compat.h): kernel
// files that use shared memory, barriers and warp shuffles but no inline assembly compile as plain C++
// and run, so their indexing, barriers and wave64 logic are tested against the CPU reference on
// machines without a GPU (tests/backend/kernel_emulation_test.cpp). Timing and the memory model are
// not emulated.
//
// A block's threads are fibers run one at a time on the calling thread (emulation.cpp); a fiber runs
// until __syncthreads or __syncwarp, where it waits for every live thread of its block (or warp), or
// until a shuffle, which the warp's threads at one complete together once all others wait elsewhere
// (they have diverged and are inactive for it; a lane whose partner is one of them reads NaN, where
// hardware leaves the value undefined). Between barriers the fibers run in a shuffled order, so a read
// of shared memory that a barrier should have ordered after another thread's write sees stale data and
// fails the comparison; a barrier that not all of them reach is reported as a deadlock. Blocks run one
// after another, so `__shared__` is `static`: each block finds the previous one's shared memory, not
// zeros.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>

#include "core/dtype.h"

#ifndef DCUSERVE_EMULATED_WARP_SIZE
#define DCUSERVE_EMULATED_WARP_SIZE 32
#endif

// ---- the runtime API compat.h aliases --------------------------------------------------------------
using gpuError_t = int;
using gpuStream_t = void*;
#define gpuSuccess 0
#define gpuGetErrorString(e) "emulation error"
#define gpuGetLastError() 0
#define gpuFuncSetAttribute(f, a, v) 0
#define gpuFuncAttributeMaxDynamicSharedMemorySize 0

// ---- qualifiers, vector types and intrinsics -------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__
#define __shared__ static

struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct uint3 { unsigned x = 0, y = 0, z = 0; };
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline float __uint_as_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t __float_as_uint(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
struct __half { uint16_t bits; };
inline __half __ushort_as_half(uint16_t bits) { return {bits}; }
inline uint16_t __half_as_ushort(__half h) { return h.bits; }
inline float __half2float(__half h) { return dcu::f16_to_f32(h.bits); }
inline __half __float2half_rn(float v) { return {dcu::f32_to_f16(v)}; }
// Byte i of the result is byte (selector nibble i & 7) of b:a (CUDA's default mode).
inline uint32_t __byte_perm(uint32_t a, uint32_t b, uint32_t selector) {
  const uint64_t bytes = uint64_t(b) << 32 | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= uint32_t(bytes >> (8 * ((selector >> (4 * i)) & 7)) & 0xff) << (8 * i);
  return r;
}
// Fibers run one at a time: a read-modify-write is atomic as it stands.
template <typename T>
T atomicAdd(T* address, T value) {
  const T old = *address;
  *address = old + value;
  return old;
}
using std::max;
using std::min;

namespace dcu::gpu::emulation {

inline uint3 block_index;
inline dim3 block_dim, grid_dim;

// Runs `kernel` for every block of the grid, one after another, block.x * block.y * block.z fibers
// each, with `smem` bytes of dynamic shared memory (NaNs until written).
void run_grid(dim3 grid, dim3 block, size_t smem, const std::function<void()>& kernel);

// kernel<<<grid, block, smem>>>(args...)
template <typename Kernel, typename... Args>
void launch(dim3 grid, dim3 block, size_t smem, Kernel kernel, Args... args) {
  run_grid(grid, block, smem, [&] { kernel(args...); });
}

// The running fiber's thread index, and what it waits at.
uint3 thread_index();
void* dynamic_shared();
void sync_block();
void sync_warp();
// v of lane (lane ^ offset) within segments of `width` lanes, among the warp's active threads.
float shuffle_xor(float v, int offset, int width);

}  // namespace dcu::gpu::emulation

#define threadIdx (::dcu::gpu::emulation::thread_index())
#define blockIdx (::dcu::gpu::emulation::block_index)
#define blockDim (::dcu::gpu::emulation::block_dim)
#define gridDim (::dcu::gpu::emulation::grid_dim)
inline void __syncthreads() { dcu::gpu::emulation::sync_block(); }
inline void __syncwarp() { dcu::gpu::emulation::sync_warp(); }
inline float __shfl_xor_sync(unsigned, float v, int offset, int width) {
  return dcu::gpu::emulation::shuffle_xor(v, offset, width);
}
inline float __shfl_xor(float v, int offset, int width = DCUSERVE_EMULATED_WARP_SIZE) {  // HIP's spelling
  return dcu::gpu::emulation::shuffle_xor(v, offset, width);
}
