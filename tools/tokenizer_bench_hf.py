#!/usr/bin/env python3
"""Single-thread encode throughput of Hugging Face tokenizers on the corpus written by
bench/tokenizer_bench (same bytes, same tokenizer.json), for docs/PERFORMANCE.md:

    build/cpu/bench/tokenizer_bench tokenizer.json /tmp/corpus.txt
    RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false python3 tools/tokenizer_bench_hf.py tokenizer.json /tmp/corpus.txt
"""
import sys
import time

from tokenizers import Tokenizer

tokenizer = Tokenizer.from_file(sys.argv[1])
corpus = open(sys.argv[2], "rb").read().decode("utf-8", errors="replace")  # keep \r\n as written
megabytes = len(corpus.encode("utf-8")) / 1e6
for attempt in range(3):
    start = time.perf_counter()
    ids = tokenizer.encode(corpus, add_special_tokens=False).ids
    seconds = time.perf_counter() - start
    print(f"HF tokenizers encode pass {attempt}: {seconds:.3f} s, {megabytes / seconds:.1f} MB/s, {len(ids)} tokens")
