#!/usr/bin/env python3
"""What a long prompt does to everyone else (issue 19's long-prompt scheduling): `clients` streaming
completions decode while one prompt of `long_tokens` arrives. Prints the long prompt's time to the
first token and the inter-token latency percentiles of the decoding clients, before and while the long
prompt fills. Stdlib only (no Node on the GPU machine):

    python3 tools/long_prompt_latency.py http://127.0.0.1:8000 MODEL [long_tokens] [clients] [max_tokens]
"""
import json
import sys
import threading
import time
import urllib.request

url, model = sys.argv[1], sys.argv[2]
long_tokens = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
clients = int(sys.argv[4]) if len(sys.argv) > 4 else 8
max_tokens = int(sys.argv[5]) if len(sys.argv) > 5 else 4000


def request(prompt, tokens, stream):
    body = {"model": model, "prompt": prompt, "max_tokens": tokens, "ignore_eos": True, "temperature": 0.0,
            "stream": stream}
    if stream:
        body["logprobs"] = 0  # a chunk for every token, even one whose text is empty
    return urllib.request.Request(f"{url}/v1/completions", data=json.dumps(body).encode(),
                                  headers={"content-type": "application/json"})


def stream_arrivals(seed, arrivals, stop):
    """Appends the arrival time of every streamed token of one client until stop is set."""
    prompt = [100 + (i * 7919 + seed) % 800 for i in range(64)]
    with urllib.request.urlopen(request(prompt, max_tokens, True)) as response:
        for line in response:
            if line.startswith(b"data: ") and not line.startswith(b"data: [DONE]"):
                arrivals.append(time.perf_counter())
            if stop.is_set():
                return


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


stop = threading.Event()
arrivals = [[] for _ in range(clients)]
threads = [threading.Thread(target=stream_arrivals, args=(c, arrivals[c], stop), daemon=True) for c in range(clients)]
for t in threads:
    t.start()
time.sleep(5)  # the clients are decoding
long_start = time.perf_counter()
long_prompt = [100 + (i * 104729) % 800 for i in range(long_tokens)]
with urllib.request.urlopen(request(long_prompt, 1, False)) as response:
    usage = json.loads(response.read())["usage"]
long_end = time.perf_counter()
stop.set()
assert usage["prompt_tokens"] == long_tokens, usage


def gaps(begin, end):
    return [1000 * (b - a) for times in arrivals for a, b in zip(times, times[1:]) if begin <= b <= end]


before, during = gaps(long_start - 4, long_start), gaps(long_start, long_end)
print(f"long prompt: {long_tokens} tokens, first token after {long_end - long_start:.2f} s "
      f"({long_tokens / (long_end - long_start):.0f} tok/s)")
for name, values in (("before", before), ("while it fills", during)):
    print(f"{clients} decoding clients, inter-token latency {name}: {len(values)} gaps, "
          f"p50 {percentile(values, 0.5):.1f} ms, p99 {percentile(values, 0.99):.1f} ms, "
          f"max {max(values, default=float('nan')):.1f} ms")
