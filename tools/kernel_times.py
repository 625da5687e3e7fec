#!/usr/bin/env python3
"""Kernel time per kernel name from an Nsight Compute CSV (the profile tables of
docs/PERFORMANCE_GPU.md). Record one prefill or decode step, then sum:

    ncu --csv --metrics gpu__time_duration.sum --print-units base --clock-control none --cache-control none \\
        dcuserve bench --random-weights 27B --device cuda --batch 1 --context 128 --prompt-len 2048 \\
        --decode-steps 1 --repeats 1 --enforce-eager > kernels.csv
    python3 tools/kernel_times.py kernels.csv [top]

Prints the total, then per kernel (template arguments dropped): calls, us, share, us per call.
"""
import collections
import csv
import re
import sys

path = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 20
rows = [r for r in csv.reader(open(path)) if len(r) > 10]  # ncu's own log lines have fewer fields
header, rows = rows[0], rows[1:]
name_at, value_at = header.index("Kernel Name"), header.index("Metric Value")
total_ns, calls = collections.Counter(), collections.Counter()
for r in rows:
    try:
        ns = float(r[value_at].replace(",", ""))
    except ValueError:
        continue
    name = r[name_at].replace("(anonymous namespace)::", "")
    match = re.search(r"(\w+)(<[^(]*>)?\(", name)
    short = match.group(1) if match else name[:48]
    total_ns[short] += ns
    calls[short] += 1
everything = sum(total_ns.values())
print(f"total {everything / 1e3:.1f} us over {sum(calls.values())} kernels")
for short, ns in total_ns.most_common(top):
    print(f"{short[:56]:56s} {calls[short]:6d} {ns / 1e3:11.1f} us {100 * ns / everything:5.1f} % "
          f"{ns / 1e3 / calls[short]:9.2f} us/call")
