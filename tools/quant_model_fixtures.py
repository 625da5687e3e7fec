#!/usr/bin/env python3
"""Quantized Qwen3.5 checkpoints with transformers references, for tests/model/quantized_checkpoint_test.cpp:

    python3 tools/quant_model_fixtures.py                 # torch + transformers (5.17): writes tests/data/quant-models/
    python3 tools/quant_model_fixtures.py --pack-only DIR # no torch: random base weights, checkpoints and their
                                                          # dequantized F32 twins (DIR/<format>-dequantized), no references

A small random Qwen3.5 text model (TEXT) is made with transformers and rounded to bf16: the base. Each format
then stores it as that format's tools do:
  gptq       GPTQ 4-bit, group 128, symmetric, checkpoint_format "gptq" (v1), with the official Qwen3.5 GPTQ's
             dynamic {"-:.*attn.*": {}}: only the MLPs are quantized;
  awq        AWQ GEMM 4-bit, group 128, zero points;
  ct-w4a16   compressed-tensors pack-quantized int4, group 32, asymmetric;
  ct-w8a8    compressed-tensors int-quantized int8 per channel (dynamic per-token activations), with the ignore
             list of llm-compressor's Qwen3.5 example (GDN stays bf16);
  fp8        transformers' own FineGrainedFP8Config quantization (128 x 128 blocks) and save_pretrained, on a GPU
             when one is there (transformers refuses to quantize to FP8 without one); where that fails the blocks
             are packed here, as transformers' Fp8Quantize computes them.
The integer formats choose codes by round-to-nearest on their library's grid (cited at each quantizer) and are
packed by tools/quant_fixtures.py's packers, which follow each library's packing code. config.json carries the
quantization_config that format's quantizer writes.

The reference is transformers in float32 on the CPU with the dequantized weights (what the stored codes and
scales mean): per prompt, the logits of every position from one full forward, and a greedy continuation by
repeated full forwards with the top-2 logit gap of each step (step_margins; where it is tiny either token is
right). Each folder gets config.json, model.safetensors, reference.json (the shape of tests/data/tiny-qwen35's)
and reference.safetensors (<key>.logits F32 [tokens, vocab], <key>.input_ids and <key>.greedy_ids I32).
"""
import argparse
import bisect
import json
import math
import os
import pathlib
import random
import re
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import quant_fixtures as qf  # noqa: E402  (the packers, pure Python)

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "quant-models"
SEED = 20261203
PREFIX = "model.language_model."  # Qwen3_5ForConditionalGeneration's text weights

# Every matmul K (hidden 128, intermediate 256, 4 q heads x 64, 4 GDN value heads x 64) is a multiple of 128,
# and so is each rank's column share at two ranks (down_proj, o_proj and out_proj: 128), so every format, FP8's
# 128 x 128 blocks and group-128 formats included, also loads at --tensor-parallel-size 2.
TEXT = dict(
    vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
    layer_types=["linear_attention", "full_attention"],
    num_attention_heads=4, num_key_value_heads=2, head_dim=64,
    linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=64, linear_value_head_dim=64,
    linear_conv_kernel_dim=4, hidden_act="silu", max_position_embeddings=4096, rms_norm_eps=1e-6,
    tie_word_embeddings=False, attention_bias=False, attention_dropout=0.0, initializer_range=0.02,
    rope_parameters={"rope_theta": 10000000.0, "partial_rotary_factor": 0.25, "rope_type": "default"},
    partial_rotary_factor=0.25, bos_token_id=None, eos_token_id=255, pad_token_id=254)
PROMPT_LENGTHS = [24, 9, 40]
NEW_TOKENS = 16


# --- the base model's tensors ----------------------------------------------------------------------------

def base_shapes(c):
    """Checkpoint name -> shape of every text-model tensor (the names transformers' state_dict gives, under PREFIX)."""
    H, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    nh, nkv, d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    hk, hv, dk, dv = c["linear_num_key_heads"], c["linear_num_value_heads"], c["linear_key_head_dim"], c["linear_value_head_dim"]
    C = 2 * hk * dk + hv * dv
    out = {PREFIX + "embed_tokens.weight": [V, H], PREFIX + "norm.weight": [H], "lm_head.weight": [V, H]}
    for i, kind in enumerate(c["layer_types"]):
        p = f"{PREFIX}layers.{i}."
        out.update({p + "input_layernorm.weight": [H], p + "post_attention_layernorm.weight": [H],
                    p + "mlp.gate_proj.weight": [I, H], p + "mlp.up_proj.weight": [I, H], p + "mlp.down_proj.weight": [H, I]})
        if kind == "full_attention":
            out.update({p + "self_attn.q_proj.weight": [nh * d * 2, H], p + "self_attn.k_proj.weight": [nkv * d, H],
                        p + "self_attn.v_proj.weight": [nkv * d, H], p + "self_attn.o_proj.weight": [H, nh * d],
                        p + "self_attn.q_norm.weight": [d], p + "self_attn.k_norm.weight": [d]})
        else:
            out.update({p + "linear_attn.in_proj_qkv.weight": [C, H], p + "linear_attn.in_proj_z.weight": [hv * dv, H],
                        p + "linear_attn.in_proj_a.weight": [hv, H], p + "linear_attn.in_proj_b.weight": [hv, H],
                        p + "linear_attn.conv1d.weight": [C, 1, c["linear_conv_kernel_dim"]],
                        p + "linear_attn.dt_bias": [hv], p + "linear_attn.A_log": [hv],
                        p + "linear_attn.norm.weight": [dv], p + "linear_attn.out_proj.weight": [H, hv * dv]})
    return out


def stays_f32(name):  # as in the real checkpoints
    return name.endswith("A_log") or "linear_attn.norm" in name


def init_value(name, shape, gauss, uniform):
    """One random value of tensor `name` (the scheme of the tiny MoE fixture; lm_head smaller so that logits stay
    O(0.3): FP8's conversion to int8 adds noise of about 1 % of a weight, which must stay inside 1e-2 of logit)."""
    if "A_log" in name:
        return math.log(1 + 15 * uniform())
    if "norm" in name:
        return gauss() * 0.1 + (1.0 if "linear_attn.norm" in name else 0.0)
    if "dt_bias" in name:
        return gauss() * 0.5
    if "embed" in name:
        return gauss()
    scale = 0.3 if name == "lm_head.weight" else 1.0
    return gauss() * scale / math.sqrt(shape[-1])


def bf16_round(x):
    """The nearest bf16 value (ties to even), as torch's .to(torch.bfloat16)."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return qf.bf16_value(bits)


def random_base(seed):
    """The base without torch: name -> (shape, flat values), bf16 values except stays_f32 ones."""
    rng = random.Random(seed)
    base = {}
    for name, shape in base_shapes(TEXT).items():
        n = math.prod(shape)
        values = [init_value(name, shape, lambda: rng.gauss(0, 1), rng.random) for _ in range(n)]
        base[name] = (shape, [qf.f32(v) if stays_f32(name) else bf16_round(v) for v in values])
    return base


def is_module(name, shape):
    """A Linear module's weight (what quantizers quantize): every 2-D .weight but the embedding."""
    return name.endswith(".weight") and len(shape) == 2 and "embed_tokens" not in name


def rows_of(shape, values):
    N, K = shape
    return [values[n * K:(n + 1) * K] for n in range(N)]


# --- quantizers: round-to-nearest on each library's grid --------------------------------------------------

def quantize_gptq(W, group):
    """GPTQ 4-bit symmetric (GPTQModel gptqmodel/quantization/quantizer.py find_params with sym: scale
    2 max|w| / 15, zero 8), v1. Returns (tensors, dequantized rows)."""
    N, K = len(W), len(W[0])
    groups = K // group
    s = [[0.0] * N for _ in range(groups)]
    q = [[0] * N for _ in range(K)]
    for n in range(N):
        for g in range(groups):
            seg = W[n][g * group:(g + 1) * group]
            xmax = max(abs(x) for x in seg) or 1.0
            s[g][n] = qf.f16(2 * xmax / 15)
            for i, x in enumerate(seg):
                q[g * group + i][n] = min(15, max(0, round(x / s[g][n]) + 8))
    z = [[8] * N for _ in range(groups)]
    s_raw = b"".join(struct.pack("<e", s[g][n]) for g in range(groups) for n in range(N))
    tensors = qf.pack_gptq(q, z, [k // group for k in range(K)], s_raw, 4, True)
    return tensors, [[s[k // group][n] * (q[k][n] - 8) for k in range(K)] for n in range(N)]


def quantize_awq(W, group):
    """AWQ 4-bit with zero points (casper-hansen/AutoAWQ awq/quantize/quantizer.py pseudo_quantize_tensor:
    scale (max - min) / 15, zero -round(min / scale) in 0..15; scales stored f16)."""
    N, K = len(W), len(W[0])
    groups = K // group
    s = [[0.0] * N for _ in range(groups)]
    z = [[0] * N for _ in range(groups)]
    q = [[0] * N for _ in range(K)]
    for n in range(N):
        for g in range(groups):
            seg = W[n][g * group:(g + 1) * group]
            s[g][n] = qf.f16(max(max(seg) - min(seg), 1e-5) / 15)
            z[g][n] = min(15, max(0, -round(min(seg) / s[g][n])))
            for i, x in enumerate(seg):
                q[g * group + i][n] = min(15, max(0, round(x / s[g][n]) + z[g][n]))
    s_raw = b"".join(struct.pack("<e", s[g][n]) for g in range(groups) for n in range(N))
    tensors = qf.pack_awq(q, z, s_raw)
    return tensors, [[s[k // group][n] * (q[k][n] - z[k // group][n]) for k in range(K)] for n in range(N)]


def quantize_ct(W, bits, group, sym, packed):
    """compressed-tensors int weights (neuralmagic/compressed-tensors quantization/utils/helpers.py
    calculate_qparams: the range widened to hold 0; symmetric scale max|w| / ((q_max - q_min) / 2), zero 0;
    asymmetric scale (max - min) / (q_max - q_min), zero q_min - round(min / scale); scales stored bf16)."""
    N, K = len(W), len(W[0])
    G = K if group == -1 else group
    groups = K // G
    q_min, q_max = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    s = [[0.0] * groups for _ in range(N)]
    zp = [[0] * groups for _ in range(N)]
    q = [[0] * K for _ in range(N)]
    for n in range(N):
        for g in range(groups):
            seg = W[n][g * G:(g + 1) * G]
            lo, hi = min(min(seg), 0.0), max(max(seg), 0.0)
            if sym:
                scale = max(-lo, hi) / ((q_max - q_min) / 2)
            else:
                scale = (hi - lo) / (q_max - q_min)
            s[n][g] = bf16_round(scale) or qf.bf16_value(0x0080)  # clamped to bf16's smallest normal
            zp[n][g] = 0 if sym else min(q_max, max(q_min, q_min - round(lo / s[n][g])))
            for i, x in enumerate(seg):
                q[n][g * G + i] = min(q_max, max(q_min, round(x / s[n][g]) + zp[n][g]))
    s_raw = b"".join(struct.pack("<H", qf.bf16_bits(s[n][g])) for n in range(N) for g in range(groups))
    tensors = qf.pack_ct(q, zp, s_raw, "BF16", bits, packed, sym)
    return tensors, [[s[n][k // G] * (q[n][k] - zp[n][k // G]) for k in range(K)] for n in range(N)]


E4M3_FINITE = sorted((qf.e4m3(b), b) for b in range(0x7F))  # the non-negative finite values and their bytes


def e4m3_byte(x):
    """The E4M3 byte nearest x (ties to the even byte), saturating at 448."""
    sign = 0x80 if x < 0 else 0
    a = min(abs(x), 448.0)
    i = bisect.bisect_left(E4M3_FINITE, (a, -1))
    if i == len(E4M3_FINITE):
        return sign | E4M3_FINITE[-1][1]
    best = E4M3_FINITE[i]
    if i > 0:
        below = E4M3_FINITE[i - 1]
        if a - below[0] < best[0] - a or (a - below[0] == best[0] - a and below[1] % 2 == 0):
            best = below
    return sign | best[1]


def quantize_fp8(W):
    """Block FP8 as transformers' Fp8Quantize computes it (integrations/finegrained_fp8.py): per 128 x 128
    block, scale 448 / max|w|, codes e4m3(w * scale), weight_scale_inv 1 / scale."""
    N, K = len(W), len(W[0])
    rb, cb = (N + 127) // 128, (K + 127) // 128
    inv = [0.0] * (rb * cb)
    for bi in range(rb):
        for bj in range(cb):
            amax = max(abs(W[n][k]) for n in range(bi * 128, min(N, bi * 128 + 128))
                       for k in range(bj * 128, min(K, bj * 128 + 128)))
            inv[bi * cb + bj] = qf.f32(amax / 448 if amax > 0 else 1.0)
    codes = [[e4m3_byte(W[n][k] / inv[(n // 128) * cb + k // 128]) for k in range(K)] for n in range(N)]
    tensors = qf.pack_fp8(codes, inv)
    return tensors, [[qf.f32(qf.e4m3(codes[n][k]) * inv[(n // 128) * cb + k // 128]) for k in range(K)] for n in range(N)]


# --- formats: which modules each stores quantized (its library's rule), how, and its quantization_config ---

def ct_config(fmt, weights, input_activations, ignore):
    """The quantization_config llm-compressor writes for one scheme targeting every Linear."""
    return {"config_groups": {"group_0": {"format": fmt, "input_activations": input_activations,
                                          "output_activations": None, "targets": ["Linear"], "weights": weights}},
            "format": fmt, "global_compression_ratio": None, "ignore": ignore, "kv_cache_scheme": None,
            "quant_method": "compressed-tensors", "quantization_status": "compressed", "sparsity_config": {}}


def ct_weights(bits, strategy, group_size, symmetric):
    return {"actorder": None, "block_structure": None, "dynamic": False, "group_size": group_size, "num_bits": bits,
            "observer": "minmax", "observer_kwargs": {}, "strategy": strategy, "symmetric": symmetric, "type": "int"}


def ct_ignored(ignore, module):  # vLLM compressed_tensors/utils.py should_ignore_layer
    return any(re.match(p[3:], module) if p.startswith("re:") else p == module for p in ignore)


CT_W4A16_IGNORE = ["lm_head", "re:.*visual.*", "re:.*linear_attn.in_proj_a$", "re:.*linear_attn.in_proj_b$"]
# llm-compressor examples/quantization_w8a8_fp8/qwen3_5_moe.py's list (research/quant-mtp.md §1.3).
CT_W8A8_IGNORE = ["lm_head", "re:.*visual.*", "re:.*mlp.gate$", "re:.*embed_tokens$", "re:.*shared_expert_gate$",
                  "re:.*mlp.shared_expert$", "re:.*linear_attn.*"]
AWQ_NOT_CONVERT = ["visual", "mtp", "linear_attn.in_proj_a", "linear_attn.in_proj_b"]
FP8_NOT_CONVERT = ["lm_head", "linear_attn.in_proj_a", "linear_attn.in_proj_b"]

FORMATS = {
    "gptq": dict(
        config={"bits": 4, "checkpoint_format": "gptq", "desc_act": False, "dynamic": {"-:.*attn.*": {}},
                "group_size": 128, "lm_head": False,
                "meta": {"quantizer": ["dcuserve tools/quant_model_fixtures.py (GPTQModel's layout, round-to-nearest)"],
                         "static_groups": False, "true_sequential": True},
                "pack_dtype": "int32", "quant_method": "gptq", "sym": True},
        # vLLM gptq_utils.py get_dynamic_override: "-:" keys exclude what they re.match; lm_head only with lm_head true.
        quantized=lambda m: m != "lm_head" and not re.match(".*attn.*", m),
        quantize=lambda W: quantize_gptq(W, 128)),
    "awq": dict(
        config={"bits": 4, "group_size": 128, "modules_to_not_convert": AWQ_NOT_CONVERT, "quant_method": "awq",
                "version": "gemm", "zero_point": True},
        # vLLM awq.py is_layer_skipped_awq: substrings; lm_head is never converted.
        quantized=lambda m: m != "lm_head" and not any(s in m for s in AWQ_NOT_CONVERT),
        quantize=lambda W: quantize_awq(W, 128)),
    "ct-w4a16": dict(
        config=ct_config("pack-quantized", ct_weights(4, "group", 32, False), None, CT_W4A16_IGNORE),
        quantized=lambda m: not ct_ignored(CT_W4A16_IGNORE, m),
        quantize=lambda W: quantize_ct(W, 4, 32, False, True)),
    "ct-w8a8": dict(
        config=ct_config("int-quantized", ct_weights(8, "channel", None, True),
                         {"actorder": None, "block_structure": None, "dynamic": True, "group_size": None, "num_bits": 8,
                          "observer": None, "observer_kwargs": {}, "strategy": "token", "symmetric": True, "type": "int"},
                         CT_W8A8_IGNORE),
        quantized=lambda m: not ct_ignored(CT_W8A8_IGNORE, m),
        quantize=lambda W: quantize_ct(W, 8, -1, True, False)),
    # The packed-here fallback of fp8 (Qwen's FP8 config fields); the transformers path writes its own.
    "fp8": dict(
        config={"activation_scheme": "dynamic", "fmt": "e4m3", "modules_to_not_convert": FP8_NOT_CONVERT,
                "quant_method": "fp8", "weight_block_size": [128, 128]},
        quantized=lambda m: not any(m == e or m.endswith("." + e) for e in FP8_NOT_CONVERT),
        quantize=quantize_fp8),
}


def pack_checkpoint(fmt, base):
    """(tensors of model.safetensors, dequantized name -> flat values, quantized module names) of `base` in `fmt`
    (None: the base itself, in bf16)."""
    spec = FORMATS.get(fmt)
    tensors, dequantized, modules = {}, {}, []
    for name, (shape, values) in base.items():
        module = name[:-len(".weight")]
        if not (spec and is_module(name, shape) and spec["quantized"](module)):
            raw = qf.f32_bytes(values) if stays_f32(name) else b"".join(struct.pack("<H", qf.bf16_bits(v)) for v in values)
            tensors[name] = ("F32" if stays_f32(name) else "BF16", shape, raw)
            dequantized[name] = values
            continue
        packed, rows = spec["quantize"](rows_of(shape, values))
        for suffix, t in packed.items():
            tensors[f"{module}.{suffix}"] = t
        dequantized[name] = [v for row in rows for v in row]
        modules.append(module)
    return tensors, dequantized, modules


def checkpoint_config(text_config, quantization_config):
    config = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
              "text_config": dict(text_config, model_type="qwen3_5_text", dtype="bfloat16", mtp_num_hidden_layers=0),
              "tie_word_embeddings": False}
    if quantization_config is not None:
        config["quantization_config"] = quantization_config
    return config


def write_folder(folder, config, tensors):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    qf.write_safetensors(folder / "model.safetensors", tensors)


def pack_only(out):
    """The random base (bf16) and every format of it, with each one's dequantized twin as F32 (the same model
    without quantization): the packing, checkable by the engine without torch."""
    base = random_base(SEED)
    write_folder(out / "base", checkpoint_config(TEXT, None), pack_checkpoint(None, base)[0])
    for fmt in FORMATS:
        tensors, dequantized, modules = pack_checkpoint(fmt, base)
        write_folder(out / fmt, checkpoint_config(TEXT, FORMATS[fmt]["config"]), tensors)
        twin = {name: ("F32", base[name][0], qf.f32_bytes(values)) for name, values in dequantized.items()}
        write_folder(out / f"{fmt}-dequantized", checkpoint_config(TEXT, None), twin)
        print(f"{fmt}: {len(modules)} quantized modules -> {out / fmt} and {out / fmt}-dequantized", flush=True)


# --- with torch: the base from transformers, FP8 by transformers, the references ---------------------------

def run_with_transformers(out):
    import torch
    import transformers
    from safetensors.torch import save_file
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    print(f"transformers {transformers.__version__}, torch {torch.__version__}, CUDA: {torch.cuda.is_available()}",
          flush=True)
    defaults = Qwen3_5TextConfig().to_dict()
    kw = {k: v for k, v in TEXT.items() if k in defaults or k in ("rope_parameters", "layer_types")}
    print("not a field of Qwen3_5TextConfig:", sorted(set(TEXT) - set(kw)), flush=True)
    cfg = Qwen3_5TextConfig(**kw)
    text_config = cfg.to_dict()
    for k in ["transformers_version", "architectures", "id2label", "label2id", "_name_or_path", "output_hidden_states",
              "return_dict", "chunk_size_feed_forward", "is_encoder_decoder", "problem_type", "output_attentions", "dtype"]:
        text_config.pop(k, None)

    def causal(name):  # checkpoint name -> Qwen3_5ForCausalLM's
        return name.replace(PREFIX, "model.", 1)

    # The base of --pack-only, which must be every parameter transformers' model has.
    base = random_base(SEED)
    params = {n: list(p.shape) for n, p in Qwen3_5ForCausalLM(cfg).named_parameters()}
    params = {n: tuple(s) for n, s in params.items()}
    ours = {causal(n): tuple(s) for n, (s, _) in base.items()}
    if ours != params:
        sys.exit(f"base_shapes() disagrees with transformers' Qwen3_5ForCausalLM: only ours "
                 f"{sorted(set(ours.items()) - set(params.items()))}, only transformers' "
                 f"{sorted(set(params.items()) - set(ours.items()))}")

    rng = random.Random(SEED)
    prompts = [(f"prompt{i}", [rng.randrange(TEXT["vocab_size"]) for _ in range(n)]) for i, n in enumerate(PROMPT_LENGTHS)]

    def reference_model(weights):  # causal name -> float32 tensor
        m = Qwen3_5ForCausalLM(cfg).float().eval()
        result = m.load_state_dict(weights, strict=False)
        missing = [k for k in result.missing_keys if k in dict(m.named_parameters())]  # buffers are the model's own
        assert not missing and not result.unexpected_keys, result
        return m

    def references(m):
        logits, cases = {}, []
        with torch.no_grad():
            for key, ids in prompts:
                logits[key] = m(torch.tensor([ids])).logits[0].float().contiguous()
                seq, margins = list(ids), []
                for _ in range(NEW_TOKENS):
                    top = torch.topk(m(torch.tensor([seq])).logits[0, -1], 2)
                    seq.append(int(top.indices[0]))
                    margins.append(float(top.values[0] - top.values[1]))
                cases.append({"key": key, "ids": ids, "greedy_ids": seq[len(ids):], "step_margins": margins})
        return logits, cases

    def write_references(folder, m, what, as_int8=None):
        """reference.json and reference.safetensors of model `m`; with `as_int8` (FP8's blocks as dcuserve holds
        them) also its outputs, under the same keys with "_as_int8" appended."""
        logits, cases = references(m)
        tensors = {}
        for c in cases:
            tensors[c["key"] + ".logits"] = logits[c["key"]]
            tensors[c["key"] + ".input_ids"] = torch.tensor(c["ids"], dtype=torch.int32)
            tensors[c["key"] + ".greedy_ids"] = torch.tensor(c["greedy_ids"], dtype=torch.int32)
        about = (f"Reference outputs of transformers {transformers.__version__}, torch {torch.__version__}, float32 on "
                 f"the CPU, for the dequantized weights of model.safetensors ({what}): logits per prompt position; "
                 "greedy_ids by repeated full forwards, step_margins the top-2 logit gap at each step.")
        if as_int8 is not None:
            int8_logits, int8_cases = references(as_int8)
            for c, c8 in zip(cases, int8_cases):
                tensors[c["key"] + ".logits_as_int8"] = int8_logits[c["key"]]
                c.update(greedy_ids_as_int8=c8["greedy_ids"], step_margins_as_int8=c8["step_margins"])
            about += (" *_as_int8: the same for the FP8 blocks as dcuserve reads them, int8 with a scale per row and "
                      "128 inputs (model/fp8_format.cpp).")
            print("fp8: its blocks as dcuserve's int8 move the logits by up to %.3e from the FP8 reference"
                  % max(float((int8_logits[k] - logits[k]).abs().max()) for k in logits), flush=True)
        save_file(tensors, str(folder / "reference.safetensors"))
        (folder / "reference.json").write_text(json.dumps({"prompts": cases, "chats": [], "about": about}, indent=1) + "\n")
        return logits, min(min(c["step_margins"]) for c in cases)

    base_model = reference_model({causal(n): torch.tensor(v).reshape(s) for n, (s, v) in base.items()})
    base_logits, _ = references(base_model)

    def report(fmt, folder, logits, smallest_margin, modules):
        change = max(float((logits[k] - base_logits[k]).abs().max()) for k in logits)
        size = sum(f.stat().st_size for f in folder.iterdir())
        print(f"{fmt}: {len(modules)} quantized modules; logits moved by up to {change:.3e} from the bf16 base; "
              f"smallest greedy step margin {smallest_margin:.3e}; {size / 1e6:.2f} MB in {folder}", flush=True)

    for fmt in [f for f in FORMATS if f != "fp8"]:
        folder = out / fmt
        tensors, dequantized, modules = pack_checkpoint(fmt, base)
        write_folder(folder, checkpoint_config(text_config, FORMATS[fmt]["config"]), tensors)
        weights = {causal(n): torch.tensor(v, dtype=torch.float32).reshape(base[n][0]) for n, v in dequantized.items()}
        report(fmt, folder, *write_references(folder, reference_model(weights), FORMATS[fmt]["config"]["quant_method"]),
               modules)

    folder = out / "fp8"
    shutil.rmtree(folder, ignore_errors=True)
    fp8_weights, modules, how = None, [], ""
    try:
        fp8_weights, modules = fp8_by_transformers(base_model, folder)
        how = "transformers FineGrainedFP8Config"
    except Exception as e:  # noqa: BLE001 (any failure there falls back, said so)
        print(f"fp8: transformers could not quantize and save it ({type(e).__name__}: {e}); packing the blocks here "
              "as transformers' Fp8Quantize computes them", flush=True)
        shutil.rmtree(folder, ignore_errors=True)
        tensors, dequantized, modules = pack_checkpoint("fp8", base)
        write_folder(folder, checkpoint_config(text_config, FORMATS["fp8"]["config"]), tensors)
        fp8_weights = {causal(n): torch.tensor(v, dtype=torch.float32).reshape(base[n][0]) for n, v in dequantized.items()}
        how = "FP8 blocks packed by tools/quant_model_fixtures.py"
    # dcuserve reads FP8 blocks as int8 with a scale per row and 128 k (model/fp8_format.cpp: scale max|w| / 127,
    # codes rounded half to even), which moves logits by more than the test's 1e-2: that model is referenced too.
    as_int8 = dict(fp8_weights)
    for module in modules:
        w = as_int8[causal(module) + ".weight"]
        groups = w.reshape(w.shape[0], -1, 128)
        scale = groups.abs().amax(-1, keepdim=True) / 127
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        as_int8[causal(module) + ".weight"] = (torch.round(groups / scale).clamp(-127, 127) * scale).reshape(w.shape)
    logits, margin = write_references(folder, reference_model(fp8_weights), "fp8, " + how, reference_model(as_int8))
    report("fp8", folder, logits, margin, modules)

    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{out}: {total / 1e6:.2f} MB in all", flush=True)


def fp8_by_transformers(model, folder):
    """The base quantized by FineGrainedFP8Config and saved by save_pretrained, copied to `folder` as saved
    (Qwen3_5ForCausalLM's layout and config). Returns (dequantized causal name -> float32 tensor, modules)."""
    import torch
    from safetensors.torch import load_file
    from transformers import FineGrainedFP8Config, Qwen3_5ForCausalLM

    with tempfile.TemporaryDirectory() as tmp:
        base_dir, fp8_dir = os.path.join(tmp, "base"), os.path.join(tmp, "fp8")
        model.save_pretrained(base_dir)
        config = FineGrainedFP8Config(weight_block_size=(128, 128), modules_to_not_convert=FP8_NOT_CONVERT)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        quantized = Qwen3_5ForCausalLM.from_pretrained(base_dir, quantization_config=config, dtype=torch.bfloat16,
                                                       device_map=device)
        quantized.save_pretrained(fp8_dir)
        saved = sorted(os.listdir(fp8_dir))
        print("fp8: transformers saved", saved, flush=True)
        folder.mkdir(parents=True, exist_ok=True)
        for f in saved:
            if f.endswith(".json") or f.endswith(".safetensors"):
                shutil.copy(os.path.join(fp8_dir, f), folder / f)
    print("fp8: quantization_config", json.loads((folder / "config.json").read_text()).get("quantization_config"),
          flush=True)
    stored = {}
    for f in sorted(folder.glob("*.safetensors")):
        stored.update(load_file(str(f)))
    expected = {n for n, _ in model.named_parameters()}
    got = {n.replace(PREFIX, "model.", 1) for n in stored}
    if expected - got:
        raise ValueError(f"the saved checkpoint lacks {sorted(expected - got)}")
    print("fp8: saved tensors besides the model's parameters and weight_scale_inv:",
          sorted(n for n in got - expected if not n.endswith(".weight_scale_inv")), flush=True)
    weights, modules = {}, []
    for stored_name, t in stored.items():
        name = stored_name.replace(PREFIX, "model.", 1)
        if name not in expected:
            continue
        if t.dtype == torch.float8_e4m3fn:
            module = name[:-len(".weight")]
            inv = stored[stored_name[:-len(".weight")] + ".weight_scale_inv"].float()
            N, K = t.shape
            blocks = inv.repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)[:, :K]
            weights[name] = t.float() * blocks
            modules.append(module)
        else:
            weights[name] = t.float()
    return weights, modules


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pack-only", metavar="DIR", help="no torch: random base, checkpoints and dequantized twins")
    parser.add_argument("--out", default=str(OUT), help="where the fixtures go (default: tests/data/quant-models)")
    args = parser.parse_args()
    if args.pack_only:
        pack_only(pathlib.Path(args.pack_only))
        return
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    run_with_transformers(out)


if __name__ == "__main__":
    main()
