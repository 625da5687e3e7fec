#!/usr/bin/env python3
"""Soak test: a real `dcuserve serve` (CPU backend, demo model, loopback only) under mixed, partly
hostile load for a bounded time. Checks that

- every well-formed request gets a well-formed answer, and the same answer its prompt got sent alone
  before the load (greedy, or sampled with a seed), streamed or not, under preemption too;
- every hostile client (resets, slow readers and senders, oversized and malformed input, pipelining)
  gets the documented answer or is closed within the server's timeouts;
- the server's RSS and open file descriptors after the load are those of before it (after a warm-up
  round of the same load), within RSS_TOLERANCE;
- the metrics add up: dcuserve:requests_submitted_total = stop + length + abort + error, stop + length =
  the choices clients saw answered, no error, and preemptions happened (vllm:num_preemptions_total > 0).

Python 3 standard library only. Exit status 0 when every check holds; a JSON report with --report.
  tests/soak/soak.py --bin build/cpu/dcuserve                  # 60 s of load (CTest: 45 s)
  tests/soak/soak.py --bin build/cpu/dcuserve --duration 1200  # the long run (docs/PERFORMANCE.md)
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases as soak_cases  # noqa: E402
import server_process  # noqa: E402
import workload  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '../..'))

# RSS may grow this much from the warmed-up baseline to the end: allocator caches (glibc keeps freed
# heap in per-thread arenas) settle within a few MiB; a leak of even a few hundred bytes per request
# passes it within minutes of the long run.
RSS_TOLERANCE_KIB = 16 * 1024
RSS_TOLERANCE_FRACTION = 0.10

# A KV cache smaller than the long prompts of one burst need together (with --max-model-len 1024 and 8
# sequences: about 139 pages of 16 tokens and 8 GDN state slots on the demo model), so bursts preempt.
SERVER_FLAGS = ['--max-model-len', str(workload.MAX_MODEL_LEN), '--max-num-seqs', '8',
                '--max-num-batched-tokens', '512', '--kv-cache-memory-bytes', '8000000',
                '--max-request-body-bytes', str(workload.MAX_BODY_BYTES),
                '--request-header-timeout', str(workload.HEADER_TIMEOUT_S),
                '--request-body-timeout', str(workload.BODY_TIMEOUT_S), '--seed', '7']


class Context:
    def __init__(self, port, cases):
        self.port = port
        self.cases = cases
        self.stats = workload.Stats()
        self.stop = threading.Event()


def run_load(ctx, seconds, seed, workers):
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=workload.worker, args=(ctx, seed * 100 + i, deadline, i, workers),
                                daemon=True)
               for i in range(workers)]
    threads.append(threading.Thread(target=workload.preemption_bursts, args=(ctx, seed * 100 + 99, deadline),
                                    daemon=True))
    for t in threads:
        t.start()
    # Every client operation is bounded (timeouts of http_client and workload), so this ends.
    for t in threads:
        t.join()


def wait_idle(server, limit_s=120):
    """Waits until nothing runs or waits; returns the metrics then."""
    deadline = time.monotonic() + limit_s
    while True:
        m = server.metrics()
        if m.get('vllm:num_requests_running', 0) == 0 and m.get('vllm:num_requests_waiting', 0) == 0 and \
                server_process.submitted(m) == sum(server_process.finished(m, r) for r in server_process.REASONS):
            return m
        if time.monotonic() > deadline:
            return m
        time.sleep(0.5)


# Connections the server is still closing when the clients are done: a lingering close (5 s at most)
# or a stalled client waiting for its timeout (workload's header and body timeouts, 4 s at most).
REST_S = 8


def resting_fds(server):
    """Open fds once the connections of a finished load are gone: after REST_S, stable for 2 s."""
    time.sleep(REST_S)
    fds = server.open_fds()
    for _ in range(30):
        time.sleep(2)
        now = server.open_fds()
        if now == fds:
            return fds
        fds = now
    return fds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--bin', required=True, help='the dcuserve executable')
    ap.add_argument('--model', default=os.path.join(REPO, 'models/dcuserve-demo'))
    ap.add_argument('--duration', type=float, default=60, help='seconds of measured load (after the warm-up)')
    ap.add_argument('--warmup', type=float, default=15, help='seconds of the same load before the baseline')
    ap.add_argument('--workers', type=int, default=6, help='client threads besides the preemption bursts')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--report', help='write the figures as JSON here')
    ap.add_argument('--log', help="keep the server's log here (default: a temporary file)")
    args = ap.parse_args()

    if args.log:
        log_path = args.log
    else:
        with tempfile.NamedTemporaryFile(prefix='dcuserve-soak-', suffix='.log', delete=False) as f:
            log_path = f.name
    server = server_process.ServerProcess(args.bin, args.model, SERVER_FLAGS, log_path)
    problems = []
    report = {'command': ' '.join(sys.argv), 'server': ' '.join(server.command), 'duration_s': args.duration,
              'warmup_s': args.warmup, 'workers': args.workers, 'seed': args.seed}
    try:
        all_cases = soak_cases.make_cases(args.seed, long_prompt_words=190)
        for group in all_cases.values():
            for case in group:
                soak_cases.record_expected(server.port, case)
        longest = max(c.usage['prompt_tokens'] for c in all_cases['long_prompt'])
        report['long_prompt_tokens'] = longest
        if longest + 200 > workload.MAX_MODEL_LEN:
            raise RuntimeError(f'a long prompt has {longest} tokens: too many for --max-model-len')

        # Warm-up: the same load, so that caches, pools and arenas reach their working size first.
        warm = Context(server.port, all_cases)
        run_load(warm, args.warmup, args.seed + 1000, args.workers)
        problems += [f'warm-up: {f}' for f in warm.stats.failures]
        before = wait_idle(server)
        fds_start = resting_fds(server)
        rss_start = server.rss_kib()

        ctx = Context(server.port, all_cases)
        samples = []
        sampler_stop = threading.Event()

        def sample():
            while not sampler_stop.wait(10):
                samples.append((round(time.monotonic() - t0), server.rss_kib(), server.open_fds()))
        t0 = time.monotonic()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        run_load(ctx, args.duration, args.seed, args.workers)
        load_seconds = time.monotonic() - t0
        sampler_stop.set()
        after = wait_idle(server)
        fds_end = resting_fds(server)
        rss_end = server.rss_kib()

        delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        sub = server_process.submitted(after)
        fin = {r: server_process.finished(after, r) for r in server_process.REASONS}
        d_fin = {r: server_process.finished(delta, r) for r in server_process.REASONS}
        s = ctx.stats
        report.update({
            'load_seconds': round(load_seconds, 1),
            'requests_by_kind': dict(sorted(s.kinds.items())),
            'bad_input_by_kind': dict(sorted(s.details.items())),
            'answered_choices': s.answered_choices,
            'streams_reset_after_tokens': s.reset_after_tokens,
            'metrics_measured_phase': {'submitted': server_process.submitted(delta), **d_fin,
                                       'preemptions': delta.get('vllm:num_preemptions_total', 0),
                                       'prompt_tokens': delta.get('vllm:prompt_tokens_total', 0),
                                       'generation_tokens': delta.get('vllm:generation_tokens_total', 0)},
            'metrics_since_start': {'submitted': sub, **fin,
                                    'preemptions': after.get('vllm:num_preemptions_total', 0)},
            'rss_kib': {'start': rss_start, 'end': rss_end, 'samples': [x[1] for x in samples]},
            'open_fds': {'start': fds_start, 'end': fds_end, 'samples': [x[2] for x in samples]},
            'failures': s.failures[:50],
            'failure_count': len(s.failures),
        })

        problems += s.failures
        if sub != sum(fin.values()):
            problems.append(f'metrics: submitted {sub} != stop + length + abort + error {sum(fin.values())} ({fin})')
        if after.get('vllm:num_requests_running', 0) or after.get('vllm:num_requests_waiting', 0):
            problems.append('metrics: requests still running or waiting at the end')
        if fin['error']:
            problems.append(f'metrics: {fin["error"]:.0f} requests finished with an error')
        if d_fin['stop'] + d_fin['length'] != s.answered_choices:
            problems.append(f'metrics: stop + length = {d_fin["stop"] + d_fin["length"]:.0f} in the measured phase, '
                            f'clients saw {s.answered_choices} choices answered')
        if d_fin['abort'] < s.reset_after_tokens:
            problems.append(f'metrics: {d_fin["abort"]:.0f} aborts, fewer than the {s.reset_after_tokens} streams '
                            'reset after their first tokens')
        if delta.get('vllm:num_preemptions_total', 0) <= 0:
            problems.append('no preemption in the measured phase: the bursts did not exhaust the KV cache')
        rss_limit = rss_start + max(RSS_TOLERANCE_KIB, rss_start * RSS_TOLERANCE_FRACTION)
        if rss_end > rss_limit:
            problems.append(f'RSS grew from {rss_start} KiB to {rss_end} KiB (limit {rss_limit:.0f})')
        if fds_end != fds_start:
            problems.append(f'open fds: {fds_start} at the start, {fds_end} at the end')
        for kind in list(workload.KINDS) + ['long prompt (preemption burst)']:
            if kind != 'bad input' and s.kinds[kind] == 0 and args.duration >= 30:
                problems.append(f'no request of kind {kind!r} ran')
    except Exception as e:  # a crash of the server shows here as a refused connection: report both
        problems.append(f'{type(e).__name__}: {e}')
    finally:
        alive = server.alive()
        code = server.stop()
        if not alive:
            problems.append(f'the server died during the run (exit {code}); log: {log_path}')
        elif code != 0:
            problems.append(f'the server exited {code} on SIGTERM; log: {log_path}')
    report['problems'] = problems
    if args.report:
        with open(args.report, 'w') as f:
            json.dump(report, f, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k not in ('failures',)}, indent=1))
    if problems:
        print(f'SOAK FAILED: {len(problems)} problem(s); server log: {log_path}', file=sys.stderr)
        for p in problems[:30]:
            print('  ' + p, file=sys.stderr)
        return 1
    print('soak: every check held', file=sys.stderr)
    if not args.log:
        os.unlink(log_path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
