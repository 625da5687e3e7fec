# The HIP toolchain of a DCUSERVE_HIP build: a ROCm-layout tree when there is one, Debian's packages otherwise.
#
# The tree is the first of -DROCM_PATH, $ROCM_PATH, /opt/dtk (Hygon's DTK) and /opt/rocm that holds
# lib/cmake/hip-lang (a ROCM_PATH that does not is an error). From it come the compiler
# (llvm/bin/clang++), the device libraries (amdgcn/bitcode, found by clang through --rocm-path), the HIP
# headers and libamdhip64, and rocBLAS and RCCL when the tree has them: from the tree alone, so a build
# never mixes two HIP versions. Without a tree, Debian's layout (apt-get install hipcc): clang++-15 and the
# HIP runtime under /usr, device libraries under /usr/lib/x86_64-linux-gnu/amdgcn/bitcode.
#
# Sets DCU_ROCM_ROOT (the tree; empty for Debian's layout), DCU_ROCM_LIB_SEARCH and
# DCU_ROCM_INCLUDE_SEARCH (the find_library / find_path arguments that search the tree alone; empty for
# Debian's layout), DCU_HIP_INCLUDE (the HIP headers for host code) and DCU_AMDHIP64; enables HIP.
# Code objects: CMAKE_HIP_ARCHITECTURES (default gfx906; docs/DCU.md, "Architectures").

function(dcu_find_rocm_root out)
  foreach(explicit IN ITEMS "${ROCM_PATH}" "$ENV{ROCM_PATH}")
    if(explicit)
      if(NOT EXISTS "${explicit}/lib/cmake/hip-lang/hip-lang-config.cmake")
        message(FATAL_ERROR "ROCM_PATH=${explicit} is not a ROCm/DTK tree: it has no lib/cmake/hip-lang")
      endif()
      set(${out} "${explicit}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  foreach(default IN ITEMS /opt/dtk /opt/rocm)
    if(EXISTS "${default}/lib/cmake/hip-lang/hip-lang-config.cmake")
      set(${out} "${default}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# Chosen once per build folder, like the compiler CMake caches with it.
if(NOT DEFINED CACHE{DCU_ROCM_ROOT})
  dcu_find_rocm_root(_root)
  set(DCU_ROCM_ROOT "${_root}" CACHE INTERNAL "The ROCm/DTK tree of this HIP build; empty: Debian's layout")
endif()

if(DCU_ROCM_ROOT)
  message(STATUS "dcuserve: HIP from the ROCm/DTK tree ${DCU_ROCM_ROOT}")
  if(NOT CMAKE_HIP_COMPILER)
    set(CMAKE_HIP_COMPILER "${DCU_ROCM_ROOT}/llvm/bin/clang++")
  endif()
  set(CMAKE_HIP_COMPILER_ROCM_ROOT "${DCU_ROCM_ROOT}")
  set(CMAKE_HIP_FLAGS_INIT "--rocm-path=${DCU_ROCM_ROOT}")
  set(DCU_ROCM_LIB_SEARCH PATHS "${DCU_ROCM_ROOT}/lib" NO_DEFAULT_PATH)
  set(DCU_ROCM_INCLUDE_SEARCH PATHS "${DCU_ROCM_ROOT}/include" NO_DEFAULT_PATH)
  set(DCU_HIP_INCLUDE "${DCU_ROCM_ROOT}/include")
  # The tree's lib is one of clang's implicit link directories, which CMake leaves out of the RPATH: the
  # executables would load whichever libamdhip64 the loader finds first. (LD_LIBRARY_PATH still wins.)
  set(CMAKE_BUILD_RPATH "${DCU_ROCM_ROOT}/lib")
  # hip-lang's own dependencies (amd_comgr, AMDDeviceLibs) from the tree too; the environment reaches
  # CMake's compiler checks, which a variable would not.
  if(NOT "$ENV{CMAKE_PREFIX_PATH}" STREQUAL "")
    set(ENV{CMAKE_PREFIX_PATH} "${DCU_ROCM_ROOT}:$ENV{CMAKE_PREFIX_PATH}")
  else()
    set(ENV{CMAKE_PREFIX_PATH} "${DCU_ROCM_ROOT}")
  endif()
else()
  message(STATUS "dcuserve: HIP from Debian's packages under /usr (no ROCM_PATH, /opt/dtk or /opt/rocm)")
  # CMake wants <root>/lib/cmake/hip-lang; Debian has it under lib/x86_64-linux-gnu: a root of links.
  set(_farm ${CMAKE_BINARY_DIR}/rocm-root)
  file(MAKE_DIRECTORY ${_farm})
  foreach(d bin include share)
    if(NOT EXISTS ${_farm}/${d})
      file(CREATE_LINK /usr/${d} ${_farm}/${d} SYMBOLIC)
    endif()
  endforeach()
  if(NOT EXISTS ${_farm}/lib)
    file(CREATE_LINK /usr/lib/x86_64-linux-gnu ${_farm}/lib SYMBOLIC)
  endif()
  if(NOT CMAKE_HIP_COMPILER)
    set(CMAKE_HIP_COMPILER clang++-15)
  endif()
  set(CMAKE_HIP_COMPILER_ROCM_ROOT ${_farm})
  set(ENV{CMAKE_PREFIX_PATH} "/usr/lib/x86_64-linux-gnu/cmake")
  set(CMAKE_HIP_FLAGS_INIT "--rocm-path=/usr --rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode")
  set(DCU_ROCM_LIB_SEARCH "")
  set(DCU_ROCM_INCLUDE_SEARCH "")
  set(DCU_HIP_INCLUDE "")
endif()

if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
  set(CMAKE_HIP_ARCHITECTURES gfx906)
endif()
enable_language(HIP)
find_library(DCU_AMDHIP64 amdhip64 ${DCU_ROCM_LIB_SEARCH} REQUIRED)
