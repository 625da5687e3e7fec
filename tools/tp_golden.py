#!/usr/bin/env python3
"""Greedy continuations of the golden prompts through `dcuserve generate` (the engine: scheduler,
sampling on the device) at several tensor-parallel sizes, against each other and against the
transformers references of tests/data/tiny-qwen35 and models/dcuserve-demo:

    python3 tools/tp_golden.py BINARY [SIZES] [DEVICE]      # e.g. build/bin/dcuserve 1,2 cuda

Sizes the model does not divide are skipped (both fixtures: 1 and 2). Exits 1 on any mismatch.
"""
import json
import subprocess
import sys

binary = sys.argv[1]
sizes = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "1,2").split(",")]
device = sys.argv[3] if len(sys.argv) > 3 else "cuda"


def valid_sizes(model):
    """The requested sizes that `dcuserve info` lists for the model."""
    info = subprocess.run([binary, "info", "--model", model], capture_output=True, text=True, check=True).stdout
    line = next(l for l in info.splitlines() if l.startswith("tensor-parallel:"))
    listed = {int(n) for n in line.split(":", 1)[1].split("(")[0].split(",")}
    return [n for n in sizes if n in listed]


def greedy(model, size, case):
    command = [binary, "generate", "--model", model, "--device", device, "--tensor-parallel-size", str(size),
               "--prompt-ids", ",".join(map(str, case["ids"])), "--max-tokens", str(len(case["greedy_ids"])),
               "--ignore-eos", "--json"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    try:
        return json.loads(run.stdout.strip().splitlines()[-1])["ids"]
    except (IndexError, KeyError, json.JSONDecodeError):
        print(f"  {' '.join(command)} failed (exit {run.returncode}):\n{run.stderr[-1500:]}")
        return None


failures = 0
for model in ["tests/data/tiny-qwen35", "models/dcuserve-demo"]:
    reference = json.load(open(model + "/reference.json"))
    model_sizes = valid_sizes(model)
    for case in reference.get("prompts", []) + reference.get("chats", []):
        answers = {n: greedy(model, n, case) for n in model_sizes}
        wrong = [n for n, ids in answers.items() if ids != case["greedy_ids"]]
        failures += bool(wrong)
        verdict = "all equal transformers" if not wrong else f"differ from transformers at sizes {wrong}"
        print(f"{model} {case['key']}: sizes {model_sizes}: {verdict}")
        for n in wrong:
            print(f"  size {n}: {answers[n]}\n  transformers: {case['greedy_ids']}")
print("cases with a mismatch:", failures)
sys.exit(1 if failures else 0)
