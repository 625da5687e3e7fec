#!/usr/bin/env python3
"""Writes a model folder with the dimensions of a Qwen3.5 family member (research/qwen35-spec.md §1.2)
and the bundled demo model's tokenizer, for `dcuserve serve --load-format dummy`:

    python3 tools/dummy_model.py 27B /tmp/qwen3.5-27b-dummy
"""
import json
import pathlib
import shutil
import sys

FAMILY = {  # hidden, intermediate, layers, heads, kv heads, GDN value heads, tied
    "0.8B": (1024, 3584, 24, 8, 2, 16, True),
    "2B": (2048, 6144, 24, 8, 2, 16, True),
    "4B": (2560, 9216, 32, 16, 4, 32, True),
    "9B": (4096, 12288, 32, 16, 4, 32, False),
    "27B": (5120, 17408, 64, 24, 4, 48, False),
}


def main(size: str, out: str) -> None:
    hidden, inter, layers, heads, kv, gdn_v, tied = FAMILY[size]
    demo = pathlib.Path(__file__).resolve().parent.parent / "models" / "dcuserve-demo"
    folder = pathlib.Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    text = {
        "model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": hidden, "intermediate_size": inter,
        "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": 256,
        "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(layers)],
        "linear_num_key_heads": 16, "linear_num_value_heads": gdn_v, "linear_key_head_dim": 128,
        "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "rms_norm_eps": 1e-6,
        "max_position_embeddings": 262144, "tie_word_embeddings": tied,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25},
    }
    config = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "text_config": text,
              "tie_word_embeddings": tied}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(demo / name, folder / name)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in FAMILY:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(FAMILY)}}} OUT_DIR")
    main(sys.argv[1], sys.argv[2])
