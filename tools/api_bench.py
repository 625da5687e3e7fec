#!/usr/bin/env python3
"""Decode speed through the HTTP API (for machines without Node; bench/serving_bench.mjs reports
latency percentiles). Times non-streaming completions of 1 and of N tokens with `concurrency`
clients at once: time per output token = (t_N - t_1) / (N - 1), and output tokens/s of all clients,
to compare with `dcuserve bench` (the server's overhead):

    python3 tools/api_bench.py http://127.0.0.1:8000 MODEL [max_tokens] [prompt_tokens] [concurrency,...] [temperature] [top_p] [structured_outputs]

Greedy by default; a temperature (and top_p) measures sampling too; a vLLM `structured_outputs` object
(JSON text, e.g. '{"json": {"type": "array", "items": {"type": "string"}}}') constrains every request.
"""
import json
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

url, model = sys.argv[1], sys.argv[2]
max_tokens = int(sys.argv[3]) if len(sys.argv) > 3 else 64
prompt_tokens = int(sys.argv[4]) if len(sys.argv) > 4 else 128
levels = [int(c) for c in (sys.argv[5] if len(sys.argv) > 5 else "1").split(",")]
temperature = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
top_p = float(sys.argv[7]) if len(sys.argv) > 7 else 1.0
structured_outputs = json.loads(sys.argv[8]) if len(sys.argv) > 8 else None


def complete(tokens: int, seed: int) -> float:
    body = {"model": model, "prompt": [100 + (i * 7919 + seed) % 800 for i in range(prompt_tokens)],
            "max_tokens": tokens, "ignore_eos": True, "temperature": temperature, "top_p": top_p, "seed": seed}
    if structured_outputs:
        body["structured_outputs"] = structured_outputs
    request = urllib.request.Request(f"{url}/v1/completions", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(request) as response:
        usage = json.loads(response.read())["usage"]
    assert usage["completion_tokens"] == tokens, usage
    return time.perf_counter() - start


complete(2, 0)  # warm-up
for clients in levels:
    with ThreadPoolExecutor(clients) as pool:
        first = max(pool.map(lambda c: complete(1, c), range(clients)))
        start = time.perf_counter()
        whole = max(pool.map(lambda c: complete(max_tokens, c), range(clients)))
        elapsed = time.perf_counter() - start
    per_token = (whole - first) / (max_tokens - 1)
    print(f"clients {clients}: first token {1000 * first:.1f} ms, {1000 * per_token:.2f} ms per output token "
          f"({1 / per_token:.1f} tok/s per client), {clients * max_tokens / elapsed:.1f} output tok/s in all")
