#!/usr/bin/env python3
"""Structured outputs judged by an outside validator (Python jsonschema, with its format checker).

  validate_corpus.py walks SAMPLER  random token walks (structured_corpus_sampler) through every
                                    corpus schema with the demo model's vocabulary
  validate_corpus.py model DCUSERVE sampled chat completions of the demo model (dcuserve serve),
                                    response_format json_schema, n=3, several seeds per schema

Every schema must compile; every finished output must parse as JSON and validate; in model mode
every choice must finish with finish_reason "stop". Prints one line per failure and a summary.
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import urllib.request

import jsonschema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests/data/structured/schemas.jsonl")
MODEL = os.path.join(ROOT, "models/dcuserve-demo")


def load_corpus():
    with open(CORPUS) as f:
        return [json.loads(line) for line in f]


def validator(schema):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def check(schema, text):
    """None when `text` is JSON valid for `schema`, else why not."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        return f"not JSON ({e})"
    errors = list(validator(schema).iter_errors(value))
    return None if not errors else "; ".join(e.message for e in errors[:3])


def walks(sampler):
    corpus = {e["name"]: e["schema"] for e in load_corpus()}
    run = subprocess.run([sampler, CORPUS, MODEL, "4", "600"], capture_output=True, text=True, check=True)
    failures, valid, unfinished = [], 0, 0
    for line in run.stdout.splitlines():
        r = json.loads(line)
        if "error" in r:
            failures.append(f"{r['name']}: does not compile: {r['error']}")
            continue
        if not r["terminated"]:
            unfinished += 1
            continue
        why = check(corpus[r["name"]], r["output"])
        if why:
            failures.append(f"{r['name']} seed {r['seed']}: {why}: {r['output'][:300]!r}")
        else:
            valid += 1
    for f in failures:
        print("FAIL", f)
    print(f"walks: {len(corpus)} schemas, {valid} outputs valid, {len(failures)} failures, "
          f"{unfinished} walks stopped at 600 tokens")
    # A walk that never ends is possible (uniform choice inside long strings); most must end.
    return not failures and valid >= 3 * len(corpus)


def start_server(binary):
    proc = subprocess.Popen([binary, "serve", "--model", MODEL, "--port", "0", "--host", "127.0.0.1"],
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"on http://[0-9.]+:([0-9]+)", line)
        if m:
            return proc, int(m.group(1))
    raise RuntimeError("the server did not start")


def chat(port, schema, seed):
    body = {"messages": [{"role": "user", "content": "Answer in JSON."}], "n": 3, "seed": seed,
            "temperature": 1.0, "max_tokens": 2000,
            "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}}}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return {"http_error": e.code, "body": e.read().decode()}


def model(binary):
    corpus = load_corpus()
    proc, port = start_server(binary)
    failures, valid = [], 0
    try:
        jobs = [(e, seed) for e in corpus for seed in (1, 2)]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            for (e, seed), r in zip(jobs, pool.map(lambda j: chat(port, j[0]["schema"], j[1]), jobs)):
                if "http_error" in r:
                    failures.append(f"{e['name']}: HTTP {r['http_error']}: {r['body'][:300]}")
                    continue
                for c in r["choices"]:
                    text = c["message"]["content"] or ""
                    if c["finish_reason"] != "stop":
                        failures.append(f"{e['name']} seed {seed} choice {c['index']}: finish_reason {c['finish_reason']}")
                    elif (why := check(e["schema"], text)) is not None:
                        failures.append(f"{e['name']} seed {seed} choice {c['index']}: {why}: {text[:300]!r}")
                    else:
                        valid += 1
    finally:
        proc.terminate()
        proc.wait()
    for f in failures:
        print("FAIL", f)
    print(f"model: {len(corpus)} schemas x 2 seeds x n=3: {valid} outputs valid, {len(failures)} failures")
    return not failures


if __name__ == "__main__":
    mode, binary = sys.argv[1], sys.argv[2]
    sys.exit(0 if (walks(binary) if mode == "walks" else model(binary)) else 1)
