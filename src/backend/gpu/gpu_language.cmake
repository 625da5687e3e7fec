# Enables the device language of the GPU backend: CUDA (nvcc) or HIP (hip_toolchain.cmake). Included by
# the top-level CMakeLists.txt, so the language and CUDA's imported targets are seen by every folder.
# Sets DCU_GPU_LANGUAGE to CUDA or HIP.

if(DCUSERVE_CUDA AND DCUSERVE_HIP)
  message(FATAL_ERROR "DCUSERVE_CUDA and DCUSERVE_HIP are exclusive: configure one build folder per vendor")
endif()

if(DCUSERVE_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90a)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(DCU_GPU_LANGUAGE CUDA)
elseif(DCUSERVE_HIP)
  include(${CMAKE_CURRENT_LIST_DIR}/hip_toolchain.cmake)
  set(DCU_GPU_LANGUAGE HIP)
endif()
