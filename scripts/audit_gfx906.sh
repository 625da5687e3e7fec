#!/usr/bin/env bash
# Compiles every GPU kernel file for gfx906 (device code only, assembly out) with Debian's clang-15 and
# fails when the code objects contain instructions gfx906 lacks or that we never want there:
#   v_mfma* (matrix cores), *permlane* (gfx10+ lane permutes), bf16 dot products;
# when a decode GEMV for F16 weights or int8 / int4 codes has no v_dot2_f32_f16 inside a loop, or one
# with int8 activations no v_dot4_i32_i8; and when a decode kernel (matmul.cu, gemv_int8_activations.cu,
# decode_attention.cu) uses scratch memory (register spills). Lists every kernel's VGPRs.
# Usage: scripts/audit_gfx906.sh [output-dir]   (needs: apt-get install hipcc)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build/audit-gfx906}"
mkdir -p "$out"
clang="${HIP_CLANG:-clang++-15}"
command -v "$clang" >/dev/null || { echo "audit_gfx906: $clang not found (apt-get install hipcc)"; exit 2; }
bitcode=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode

status=0
for src in "$root"/src/backend/gpu/*.cu; do
  name="$(basename "$src" .cu)"
  "$clang" -x hip --offload-arch=gfx906 --cuda-device-only -S -O3 -std=c++17 -DDCUSERVE_HIP=1 \
    --rocm-path=/usr --rocm-device-lib-path="$bitcode" -I"$root/src" -o "$out/$name.s" "$src"
  if bad=$(grep -nE '^\s*(v_mfma|v_\w*permlane|v_dot2\w*bf16|v_dot2c)' "$out/$name.s"); then
    echo "audit_gfx906: FORBIDDEN instructions in $name.cu:"; echo "$bad" | head -20; status=1
  fi
  echo "audit_gfx906: $name.cu -> $out/$name.s ($(grep -c '^\s*v_' "$out/$name.s") vector instructions)"
done

# The decode GEMVs must use their dot instruction inside a loop (a label whose block is closed by a
# backward branch to it): v_dot2_f32_f16 for F16 weights and for int8 / int4 codes with f32 activations
# (matmul.s, the vectorised instantiations), v_dot4_i32_i8 for codes with int8 activations
# (gemv_int8_activations.s).
/usr/bin/python3 - "$out" <<'PY' || status=1
import os, re, sys
def loop_check(path, kernel, kinds, instruction):
    asm = open(path).read().splitlines()
    funcs, cur = {}, None
    for line in asm:
        m = re.match(r'^(_Z\S*' + kernel + r'\S*):', line)
        if m: cur = m.group(1); funcs[cur] = []; continue
        if cur and line.startswith('.Lfunc_end'): cur = None; continue
        if cur: funcs[cur].append(line)
    chosen = {n: b for n, b in funcs.items() if any(k in n for k in kinds)}
    ok = True
    for kind in kinds:
        if not any(kind in n for n in chosen):
            print(f'audit_gfx906: no {kind} {kernel} instantiation found in {os.path.basename(path)}'); ok = False
    for name, body in chosen.items():
        labels, in_loop = {}, False
        for i, line in enumerate(body):
            m = re.match(r'^(\.LBB\w+):', line)
            if m: labels[m.group(1)] = i
            b = re.match(r'^\s*s_(cbranch_\w+|branch)\s+(\.LBB\w+)', line)
            if b and b.group(2) in labels and labels[b.group(2)] < i:
                if any(instruction in l for l in body[labels[b.group(2)]:i]): in_loop = True
        print(f"audit_gfx906: {name}: {instruction} in a loop: {'yes' if in_loop else 'NO'}")
        ok &= in_loop
    return ok
out = sys.argv[1]
ok = loop_check(os.path.join(out, 'matmul.s'), 'gemv_kernel', ('3F16ELb1E', '8Int8CodeELb1E', '8Int4PairELb1E'),
                'v_dot2_f32_f16')
ok &= loop_check(os.path.join(out, 'gemv_int8_activations.s'), 'gemv_int8_kernel', ('8Int8CodeE', '8Int4PairE'),
                 'v_dot4_i32_i8')
sys.exit(0 if ok else 1)
PY
# Every kernel's VGPRs and scratch bytes from the code-object metadata; a decode kernel (matmul.cu,
# gemv_int8_activations.cu) or decode attention (decode_attention.cu) with scratch spills registers to memory.
/usr/bin/python3 - "$out" <<'PY' || status=1
import glob, os, re, sys
ok = True
for path in sorted(glob.glob(os.path.join(sys.argv[1], '*.s'))):
    text = open(path).read()
    for m in re.finditer(r'\.name:\s+(\S+)\n(.*?)(?=\n\s+- \.|\n\s*\.end_amdgpu_metadata)', text, re.S):
        name, block = m.group(1), m.group(2)
        scratch = int(re.search(r'\.private_segment_fixed_size:\s+(\d+)', block).group(1))
        vgprs = int(re.search(r'\.vgpr_count:\s+(\d+)', block).group(1))
        print(f"audit_gfx906: {os.path.basename(path)[:-2]}: {vgprs:3d} VGPRs, scratch {scratch:5d} B  {name}")
        if scratch and os.path.basename(path) in ('matmul.s', 'gemv_int8_activations.s', 'decode_attention.s'):
            print(f"audit_gfx906: decode kernel {name} spills to scratch"); ok = False
sys.exit(0 if ok else 1)
PY
[ $status -eq 0 ] && echo "audit_gfx906: PASS" || echo "audit_gfx906: FAIL"
exit $status
