#!/usr/bin/env python3
"""Writes the quantized-checkpoint fixtures of tests/model/checkpoint_formats_test.cpp into tests/data/quant/:

    /usr/bin/python3 tools/quant_fixtures.py

model.safetensors holds, for each fixture module, the tensors a quantizer writes (packed here from random
integer codes, following the library code cited at each packer) and `<module>.expected`, the F32 [N, K]
matrix the packer dequantizes from those codes. Every expected value is exact in f32: a scale with at
most 24 significant bits times an integer of at most 9 bits is exact in a Python float, and rounding
it once to f32 gives what an f32 multiply gives. fixtures.json lists each module with its
quantization_config, N and K. fp8_e4m3_table is the F32 [256] value of every E4M3 byte by the OCP FP8
formula. Pure Python (no numpy); the output is deterministic.
"""
import json
import math
import pathlib
import random
import struct

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "quant"
rng = random.Random(20261201)


# --- value helpers -------------------------------------------------------------------------------

def f16(x):  # nearest half value
    return struct.unpack("<e", struct.pack("<e", x))[0]


def bf16_bits(x):  # a bf16 value chosen by truncating an f32
    return struct.unpack("<I", struct.pack("<f", x))[0] >> 16


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def random_scales(count, dtype):
    """(values, bytes) of `count` scales in [0.002, 0.02] stored as `dtype`."""
    values, raw = [], b""
    for _ in range(count):
        x = rng.uniform(0.002, 0.02)
        if dtype == "F16":
            v = f16(x)
            raw += struct.pack("<e", v)
        elif dtype == "BF16":
            b = bf16_bits(x)
            v = bf16_value(b)
            raw += struct.pack("<H", b)
        else:
            v = f32(x)
            raw += struct.pack("<f", v)
        values.append(v)
    return values, raw


def i32_bytes(words):  # uint32 words stored as I32
    return b"".join(struct.pack("<I", w & 0xFFFFFFFF) for w in words)


def f32_bytes(values):
    return b"".join(struct.pack("<f", v) for v in values)


def pack_words(values, bits):
    """Packs a flat list along its length, value i at bits [bits*i, bits*i + bits) of its word, low first."""
    pf = 32 // bits
    words = []
    for c in range(0, len(values), pf):
        w = 0
        for i, v in enumerate(values[c:c + pf]):
            w |= (v & ((1 << bits) - 1)) << (bits * i)
        words.append(w)
    return words


# --- GPTQ: GPTQModel gptqmodel/nn_modules/qlinear/__init__.py pack_original (the AutoGPTQ layout) ----

def pack_gptq(q, z, g_idx, s_raw, bits, v1):
    """The tensors of codes q [K][N] (the packer's intweight), zero points z [groups][N], g_idx [K] and the
    F16 scales [groups][N] as bytes."""
    K, N, groups, pf = len(q), len(q[0]), len(z), 32 // bits
    # qweight[r][n] |= intweight[pf r + i][n] << (bits i)
    qweight = [0] * ((K // pf) * N)
    for r in range(K // pf):
        for n in range(N):
            qweight[r * N + n] = pack_words([q[r * pf + i][n] for i in range(pf)], bits)[0]
    # qzeros[g][c] |= zeros[g][pf c + i] << (bits i); v1 subtracts 1 from every field as one word
    # subtraction (gptqmodel/utils/model.py convert_gptq_v2_to_v1_format_module).
    qzeros = []
    for g in range(groups):
        for w in pack_words(z[g], bits):
            qzeros.append((w - (0x11111111 if bits == 4 else 0x01010101)) & 0xFFFFFFFF if v1 else w)
    return {
        "qweight": ("I32", [K // pf, N], i32_bytes(qweight)),
        "qzeros": ("I32", [groups, N // pf], i32_bytes(qzeros)),
        "scales": ("F16", [groups, N], s_raw),
        "g_idx": ("I32", [K], i32_bytes(g_idx)),
    }


def group_index(K, G, act_order):
    """g_idx: k // G, or act-order: the columns quantized in a random order, groups of G in that order."""
    perm = list(range(K))
    if act_order:
        rng.shuffle(perm)
    g_idx = [0] * K
    for i, k in enumerate(perm):
        g_idx[k] = i // G
    return g_idx


def gptq(name, N, K, bits, group, sym, v1, act_order=False):
    pf, maxq = 32 // bits, (1 << bits) - 1
    G = K if group == -1 else group
    groups = K // G
    g_idx = group_index(K, G, act_order)
    mid = (maxq + 1) // 2
    z = [[mid if sym else rng.randint(0, maxq) for _ in range(N)] for _ in range(groups)]  # [groups][N]
    if bits == 8 and not sym:  # q - z must fit int8 (dcuserve's Int8 is symmetric)
        z = [[rng.randint(100, 156) for _ in range(N)] for _ in range(groups)]
    q = [[0] * N for _ in range(K)]  # [K][N], the packer's intweight
    for k in range(K):
        for n in range(N):
            zz = z[g_idx[k]][n]
            q[k][n] = rng.randint(max(0, zz - 128), min(maxq, zz + 127))
    s, s_raw = random_scales(groups * N, "F16")  # [groups][N]
    expected = [s[g_idx[k] * N + n] * (q[k][n] - z[g_idx[k]][n]) for n in range(N) for k in range(K)]
    tensors = pack_gptq(q, z, g_idx, s_raw, bits, v1)
    config = {"quant_method": "gptq", "bits": bits, "group_size": group, "sym": sym, "desc_act": act_order,
              "checkpoint_format": "gptq" if v1 else "gptq_v2"}
    return name, config, N, K, tensors, expected


# --- AWQ GEMM: casper-hansen/AutoAWQ awq/modules/linear/gemm.py WQLinear_GEMM.from_linear -------------

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def pack_awq(q, z, s_raw):
    """The tensors of codes q [K][N] (intweight), zero points z [groups][N] and F16 scales [groups][N] as bytes."""
    K, N, groups = len(q), len(q[0]), len(z)

    def pack(rows):  # qweight[:, col] |= intweight[:, col * 8 + order_map[i]] << (i * 4)
        out = []
        for row in rows:
            for col in range(N // 8):
                out.append(pack_words([row[col * 8 + AWQ_ORDER[i]] for i in range(8)], 4)[0])
        return out

    return {
        "qweight": ("I32", [K, N // 8], i32_bytes(pack(q))),
        "qzeros": ("I32", [groups, N // 8], i32_bytes(pack(z))),
        "scales": ("F16", [groups, N], s_raw),
    }


def awq(name, N, K, group):
    groups = K // group
    z = [[rng.randint(0, 15) for _ in range(N)] for _ in range(groups)]  # [groups][N]
    q = [[rng.randint(0, 15) for _ in range(N)] for _ in range(K)]  # [K][N] intweight
    s, s_raw = random_scales(groups * N, "F16")
    expected = [s[(k // group) * N + n] * (q[k][n] - z[k // group][n]) for n in range(N) for k in range(K)]
    tensors = pack_awq(q, z, s_raw)
    config = {"quant_method": "awq", "bits": 4, "group_size": group, "zero_point": True, "version": "gemm"}
    return name, config, N, K, tensors, expected


# --- compressed-tensors: neuralmagic/compressed-tensors
#     src/compressed_tensors/compressors/quantized_compressors/pack_quantized.py (pack_to_int32) and
#     naive_quantized.py ------------------------------------------------------------------------------

def pack_to_int32(rows, bits, packed_dim):
    """pack_to_int32: signed values + 2^(bits-1), zero-padded, packed along dim 1 (rows) or dim 0."""
    offset = 1 << (bits - 1)
    if packed_dim == 0:  # transpose, pack rows, transpose back
        cols = [[r[c] for r in rows] for c in range(len(rows[0]))]
        packed = [pack_words([v + offset for v in col], bits) for col in cols]
        return [[packed[c][w] for c in range(len(cols))] for w in range(len(packed[0]))]
    return [pack_words([v + offset for v in row], bits) for row in rows]


def pack_ct(q, zp, s_raw, scale_dtype, bits, packed, sym, g_idx=None):
    """The tensors of signed codes q [N][K], zero points zp [N][groups] and scales [N][groups] as bytes of
    `scale_dtype`: pack-quantized (weight_packed, weight_shape) or int-/naive-quantized (weight I8)."""
    N, K, groups = len(q), len(q[0]), len(zp[0])
    tensors = {"weight_scale": (scale_dtype, [N, groups], s_raw)}
    if packed:
        words = pack_to_int32(q, bits, 1)
        tensors["weight_packed"] = ("I32", [N, len(words[0])], i32_bytes(sum(words, [])))
        tensors["weight_shape"] = ("I64", [2], struct.pack("<qq", N, K))
        if not sym:
            zwords = pack_to_int32(zp, bits, 0)
            tensors["weight_zero_point"] = ("I32", [len(zwords), groups], i32_bytes(sum(zwords, [])))
    else:
        tensors["weight"] = ("I8", [N, K], b"".join(struct.pack("<b", v) for row in q for v in row))
        if not sym:
            tensors["weight_zero_point"] = ("I8", [N, groups], b"".join(struct.pack("<b", v) for row in zp for v in row))
    if g_idx is not None:
        tensors["weight_g_idx"] = ("I32", [K], i32_bytes(g_idx))
    return tensors


def ct_scheme(bits, group, sym, fmt):
    weights = {"num_bits": bits, "type": "int", "symmetric": sym, "dynamic": False,
               "strategy": "channel" if group == -1 else "group", "group_size": None if group == -1 else group}
    return {"quant_method": "compressed-tensors", "format": fmt,
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": None}},
            "ignore": ["lm_head"]}


def ct(name, N, K, bits, group, sym, packed, scale_dtype, act_order=False):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    G = K if group == -1 else group
    groups = K // G
    g_idx = group_index(K, G, act_order)
    zp = [[0 if sym else rng.randint(lo, hi) // (8 if bits == 8 else 1) for _ in range(groups)] for _ in range(N)]
    q = [[0] * K for _ in range(N)]  # [N][K] signed codes
    for n in range(N):
        for k in range(K):
            z = zp[n][g_idx[k]]
            q[n][k] = rng.randint(max(lo, z - 128), min(hi, z + 127))
    s, s_raw = random_scales(N * groups, scale_dtype)  # [N][groups]
    expected = [s[n * groups + g_idx[k]] * (q[n][k] - zp[n][g_idx[k]]) for n in range(N) for k in range(K)]
    tensors = pack_ct(q, zp, s_raw, scale_dtype, bits, packed, sym, g_idx if act_order else None)
    config = ct_scheme(bits, group, sym, "pack-quantized" if packed else "int-quantized")
    return name, config, N, K, tensors, expected


# --- FP8 E4M3 (OCP 8-bit floating point, E4M3: bias 7, no infinities, S.1111.111 is NaN) --------------

def e4m3(b):
    sign = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 3) & 0xF, b & 0x7
    if e == 0xF and m == 0x7:
        return math.nan
    if e == 0:
        return sign * (m / 8) * 2.0 ** (1 - 7)
    return sign * (1 + m / 8) * 2.0 ** (e - 7)


def pack_fp8(codes, inv):
    """The tensors of E4M3 bytes codes [N][K] and F32 multipliers inv [ceil(N/128) * ceil(K/128)], row-major."""
    N, K = len(codes), len(codes[0])
    return {
        "weight": ("F8_E4M3", [N, K], bytes(b for row in codes for b in row)),
        "weight_scale_inv": ("F32", [(N + 127) // 128, (K + 127) // 128], f32_bytes(inv)),
    }


def fp8_block(name, N, K):
    """huggingface/transformers integrations/finegrained_fp8.py: W = fp8(weight) * weight_scale_inv[n//128, k//128]."""
    codes = [[rng.choice([b for b in range(256) if b not in (0x7F, 0xFF)]) for _ in range(K)] for _ in range(N)]
    codes[0][:128] = [rng.choice([0x00, 0x80]) for _ in range(128)]  # an all-zero group
    rb, cb = (N + 127) // 128, (K + 127) // 128
    inv = [f32(rng.uniform(1e-4, 1e-2)) for _ in range(rb * cb)]
    expected = [e4m3(codes[n][k]) * inv[(n // 128) * cb + k // 128] for n in range(N) for k in range(K)]
    tensors = pack_fp8(codes, inv)
    config = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
    return name, config, N, K, tensors, expected


def write_safetensors(path, tensors):
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def main():
    fixtures = [
        gptq("gptq_4bit_g32_sym_v1", 32, 256, 4, 32, True, True),
        gptq("gptq_4bit_g128_asym_v1", 32, 256, 4, 128, False, True),
        gptq("gptq_4bit_g32_actorder_v2", 32, 256, 4, 32, False, False, act_order=True),
        gptq("gptq_8bit_g128_sym_v1", 32, 256, 8, 128, True, True),
        gptq("gptq_8bit_channel_asym_v2", 32, 256, 8, -1, False, False),
        awq("awq_g32", 32, 256, 32),
        awq("awq_g128", 40, 256, 128),
        ct("ct_pack4_g32_sym", 36, 256, 4, 32, True, True, "BF16"),
        ct("ct_pack4_g128_asym", 36, 256, 4, 128, False, True, "F16"),
        ct("ct_pack4_channel_sym", 32, 256, 4, -1, True, True, "F32"),
        ct("ct_pack4_g64_actorder", 32, 256, 4, 64, True, True, "BF16", act_order=True),
        ct("ct_pack8_g64_asym", 32, 256, 8, 64, False, True, "BF16"),
        ct("ct_int8_channel", 32, 256, 8, -1, True, False, "BF16"),
        ct("ct_int8_g128_asym", 32, 256, 8, 128, False, False, "F16"),
        fp8_block("fp8_block", 136, 256),
    ]
    tensors, listing = {}, []
    for name, config, N, K, module_tensors, expected in fixtures:
        for suffix, t in module_tensors.items():
            tensors[f"{name}.{suffix}"] = t
        tensors[f"{name}.expected"] = ("F32", [N, K], f32_bytes(expected))
        listing.append({"module": name, "quantization_config": config, "N": N, "K": K})
    table = [e4m3(b) for b in range(256)]
    tensors["fp8_e4m3_table"] = ("F32", [256], f32_bytes(table))
    OUT.mkdir(parents=True, exist_ok=True)
    write_safetensors(OUT / "model.safetensors", tensors)
    (OUT / "fixtures.json").write_text(json.dumps(listing, indent=1) + "\n")


if __name__ == "__main__":
    main()
