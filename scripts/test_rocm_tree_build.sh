#!/usr/bin/env bash
# Proves the HIP build's ROCm/DTK tree logic (src/backend/gpu/hip_toolchain.cmake) without ROCm: lays out
# a tree the way ROCm and Hygon's DTK install (llvm/{bin,lib}, lib/libamdhip64.so, lib/cmake/hip-lang,
# include/hip, amdgcn/bitcode, bin/.hipVersion) from Debian's HIP packages under build/fake-rocm, configures
# the gfx906 build with ROCM_PATH pointing at it, checks that the compiler, the HIP runtime and the device
# libraries come from the tree, then compiles the GPU backend, links gpu_arch_test, checks that it loads
# the tree's libamdhip64 and carries gfx906 code objects, and runs it.
# Usage: scripts/test_rocm_tree_build.sh   (needs: apt-get install hipcc; scripts/setup.sh installs it)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tree="$root/build/fake-rocm"
build="$root/build/hip-rocm-tree"
multiarch=/usr/lib/x86_64-linux-gnu

rm -rf "$tree"
mkdir -p "$tree"/{bin,llvm/bin,include,lib,amdgcn}
ln -s /usr/lib/llvm-15/bin/clang++ "$tree/llvm/bin/clang++"
ln -s /usr/lib/llvm-15/lib "$tree/llvm/lib"  # clang's headers and runtime builtins, which hip-lang looks for
ln -s /usr/share/hip/version "$tree/bin/.hipVersion"  # clang reads the HIP version there
ln -s /usr/include/hip "$tree/include/hip"
ln -s /usr/include/hsa "$tree/include/hsa"
ln -s "$multiarch/amdgcn/bitcode" "$tree/amdgcn/bitcode"
for lib in "$multiarch"/lib{amdhip64,amd_comgr}.so*; do ln -s "$lib" "$tree/lib/"; done
# The CMake packages of Debian's hip-lang, amd_comgr and AMDDeviceLibs, moved to ROCm's places: from
# lib/x86_64-linux-gnu/cmake to lib/cmake (paths one folder shorter: three steps up to the prefix, not
# four), libraries from lib/x86_64-linux-gnu to lib, device libraries to amdgcn/bitcode.
relayout() {
  mkdir -p "$tree/lib/cmake/$(basename "$1")"
  for f in "$1"/*.cmake; do
    sed -e 's#/lib/x86_64-linux-gnu/amdgcn/#/amdgcn/#g' -e 's#/lib/x86_64-linux-gnu/#/lib/#g' \
        -e 's#/\.\./\.\./\.\./\.\./"#/../../../"#' \
        -e '0,/get_filename_component(_IMPORT_PREFIX "${_IMPORT_PREFIX}" PATH)/{//d}' \
        "$f" > "$tree/lib/cmake/$(basename "$1")/$(basename "$f")"
  done
}
relayout "$multiarch/cmake/hip-lang"
relayout "$multiarch/cmake/amd_comgr"
relayout /usr/lib/cmake/AMDDeviceLibs

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_HIP_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$root"
fi
rm -rf "$build"
ROCM_PATH="$tree" cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDCUSERVE_HIP=ON \
  -DCMAKE_HIP_ARCHITECTURES=gfx906 "${launcher[@]}" >/dev/null

fail() { echo "test_rocm_tree_build: FAIL: $*"; exit 1; }
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
[ "$(cache DCU_ROCM_ROOT)" = "$tree" ] || fail "ROCm root '$(cache DCU_ROCM_ROOT)', not the tree"
[ "$(cache DCU_AMDHIP64)" = "$tree/lib/libamdhip64.so" ] || fail "HIP runtime $(cache DCU_AMDHIP64)"
# Parsed, not grepped: commands carry escaped quotes (-DDCUSERVE_GPU_ARCHITECTURES=\"gfx906\").
/usr/bin/python3 - "$build/compile_commands.json" "$tree" <<'PY' || fail "the kernels are not compiled by the tree's clang++ against the tree"
import json, sys
tree = sys.argv[2]
kernels = [c["command"] for c in json.load(open(sys.argv[1])) if c["file"].endswith(".cu")]
ok = lambda c: c.startswith(f"{tree}/llvm/bin/clang++ ") and f" --rocm-path={tree} " in c and " --offload-arch=gfx906 " in c
sys.exit(0 if kernels and all(map(ok, kernels)) else 1)
PY
grep -q -- "-I$tree/include " "$build/compile_commands.json" || fail "host code does not include the tree's HIP headers"

cmake --build "$build" --target gpu_arch_test -j "$(nproc)"
exe="$build/tests/backend/gpu_arch_test"
# ldd's output is captured first: with pipefail, `ldd | grep -q` fails whenever grep exits before ldd has
# written its last line (SIGPIPE). The tree may also be reached through a symlinked path: compare both.
links="$(ldd "$exe")"
hip_dir="$(sed -n 's#^\s*libamdhip64\.so\.[0-9]* => \(.*\)/libamdhip64\.so\.[0-9]* .*#\1#p' <<<"$links")"
[ -n "$hip_dir" ] && [ "$(cd "$hip_dir" && pwd -P)" = "$(cd "$tree/lib" && pwd -P)" ] ||
  fail "not linked with the tree's HIP runtime: $(grep libamdhip64 <<<"$links" || echo 'no libamdhip64')"
grep -aq "hipv4-amdgcn-amd-amdhsa--gfx906" "$exe" || fail "no gfx906 code object in the offload bundle"
"$exe" --gtest_brief=1
echo "test_rocm_tree_build: PASS: the gfx906 build configured, compiled and linked against $tree"
