#!/usr/bin/env python3
"""Finds where dcuserve and Hugging Face tokenizers encode a text differently: encodes the whole
corpus (read as UTF-8, invalid bytes replaced as Python does) with both — dcuserve through
`dcuserve tokenize` — and prints the first differing positions with their context.

    python3 tools/tokenizer_diff.py DCUSERVE_BIN tokenizer.json corpus.txt
"""
import json
import subprocess
import sys

from tokenizers import Tokenizer

binary, tokenizer_path, corpus_path = sys.argv[1:4]
raw = open(corpus_path, "rb").read()
text = raw.decode("utf-8", errors="replace")
hf = Tokenizer.from_file(tokenizer_path)
expected = hf.encode(text, add_special_tokens=False).ids
ours = json.loads(subprocess.run([binary, "tokenize", "--tokenizer", tokenizer_path], input=json.dumps([text]),
                                 capture_output=True, text=True, check=True).stdout)[0]
print(f"{len(raw)} bytes ({'valid' if text.encode() == raw else 'invalid'} UTF-8): hf {len(expected)} tokens, "
      f"dcuserve {len(ours)}")
shown = 0
i = 0
while i < min(len(expected), len(ours)) and shown < 6:
    if expected[i] != ours[i]:
        print(f"token {i}: context {hf.decode(expected[max(0, i - 8):i + 8])!r}")
        print("  hf  ", expected[i:i + 8], [hf.id_to_token(t) for t in expected[i:i + 8]])
        print("  ours", ours[i:i + 8], [hf.id_to_token(t) for t in ours[i:i + 8]])
        shown += 1
        i += 64  # past this spot; later positions may be offset
    else:
        i += 1
