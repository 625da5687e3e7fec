#pragma once
// NCCL (CUDA builds) or RCCL (HIP builds), opened with dlopen the first time tensor parallelism needs
// it rather than linked: a machine without it still runs everything else, and a broken one (DTK
// images' "librccl.so.1: undefined symbol: rsmi_init") is an error that names the library and the fix.
// Only nccl_communicator.cpp includes this (it needs the vendor header for the types).

#if defined(DCUSERVE_HIP)
#include <rccl/rccl.h>
#else
#include <nccl.h>
#endif

#include "comm/nccl_communicator.h"

namespace dcu {

// The functions dcuserve calls, resolved from the loaded library.
struct NcclApi {
  decltype(&ncclGetVersion) GetVersion;
  decltype(&ncclGetErrorString) GetErrorString;
  decltype(&ncclGetUniqueId) GetUniqueId;
  decltype(&ncclCommInitRank) CommInitRank;
  decltype(&ncclGroupStart) GroupStart;
  decltype(&ncclGroupEnd) GroupEnd;
  decltype(&ncclAllReduce) AllReduce;
  decltype(&ncclAllGather) AllGather;
  decltype(&ncclCommAbort) CommAbort;
  decltype(&ncclCommDestroy) CommDestroy;
};

// Loads the library once; throws dcu::Error (the library, the loader's message, the fix) when it cannot.
const NcclApi& nccl_api();

}  // namespace dcu
