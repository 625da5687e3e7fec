"""What the soak test's clients do: one function per kind of client, well-behaved or not, each checking
what the server answers. A kind returns the number of choices it saw answered completely (what the
server must count as stop or length); it raises cases.Mismatch when the server got something wrong."""

import random
import threading
import time
from collections import Counter

import cases as soak_cases
import http_client
from cases import Mismatch

# The server's flags that the clients below rely on (soak.py passes them).
MAX_MODEL_LEN = 1024
MAX_BODY_BYTES = 1 << 20
HEADER_TIMEOUT_S = 3
BODY_TIMEOUT_S = 4
# How much later than its timeout the server may close a stalled connection on a loaded machine.
CLOSE_SLACK_S = 20


class Stats:
    """Counts, thread-safe: requests by kind, subkinds (which malformed input, which disconnect), failures."""

    def __init__(self):
        self.lock = threading.Lock()
        self.kinds = Counter()
        self.details = Counter()
        self.answered_choices = 0  # choices answered completely: the server's stop + length
        self.reset_after_tokens = 0  # streams reset after their first tokens: surely submitted, so aborts
        self.failures = []

    def count(self, kind, answered=0, detail=None):
        with self.lock:
            self.kinds[kind] += 1
            self.answered_choices += answered
            if detail:
                self.details[detail] += 1

    def fail(self, kind, message):
        with self.lock:
            self.failures.append(f'{kind}: {message}')


# ---- well-formed requests, answers checked against the isolated run ----

def completion(ctx, rng):
    return soak_cases.run(ctx.port, rng.choice(ctx.cases['completion']), stream=rng.random() < 0.5,
                          include_usage=rng.random() < 0.5)


def chat(ctx, rng):
    return soak_cases.run(ctx.port, rng.choice(ctx.cases['chat']), stream=rng.random() < 0.5,
                          include_usage=rng.random() < 0.5)


def seeded_n(ctx, rng):
    return soak_cases.run(ctx.port, rng.choice(ctx.cases['seeded_n']), stream=rng.random() < 0.5)


def slow_reader(ctx, rng):
    """A streamed long answer read a few hundred bytes at a time through a small receive window."""
    case = rng.choice(ctx.cases['long_output'])
    sock = http_client.connect(ctx.port, receive_buffer=2048)
    try:
        reader = http_client.Reader(sock, chunk_size=512, pause_s=0.005)
        return soak_cases.run(ctx.port, case, stream=True, reader=reader, sock=sock)
    finally:
        sock.close()


def pipelined(ctx, rng):
    """Several requests on one kept-alive connection, sent before their answers: all in one write, then
    one more while a stream is still running; answered in order."""
    a, b = rng.choice(ctx.cases['completion']), rng.choice(ctx.cases['chat'])
    streamed = rng.choice(ctx.cases['long_output'])
    sock = http_client.connect(ctx.port)
    try:
        sock.sendall(http_client.request_bytes('POST', a.endpoint, a.request(False)) +
                     http_client.request_bytes('GET', '/health') +
                     http_client.request_bytes('POST', b.endpoint, b.request(True)))
        reader = http_client.Reader(sock)
        soak_cases.verify(a, reader.read_response(), stream=False)
        health = reader.read_response()
        if health.status != 200:
            raise Mismatch(f'pipelined /health: HTTP {health.status}')
        soak_cases.verify(b, reader.read_response(), stream=True)
        sock.sendall(http_client.request_bytes('POST', streamed.endpoint, streamed.request(True)))
        status, _, headers = reader.read_head()
        sock.sendall(http_client.request_bytes('POST', a.endpoint, a.request(False), keep_alive=False))
        body = b''.join(reader.read_chunks())
        soak_cases.verify(streamed, http_client.Response(status, '', headers, body), stream=True)
        soak_cases.verify(a, reader.read_response(), stream=False)
    finally:
        sock.close()
    return sum(c.body.get('n', 1) for c in (a, b, streamed, a))


# ---- clients that go away ----

def disconnect_mid_stream(ctx, rng):
    """Reads a few events of a long stream, then resets the connection."""
    case = rng.choice(ctx.cases['long_output'])
    read = rng.randint(2, 6)  # drawn before, so the worker's random sequence does not depend on timing
    sock = http_client.connect(ctx.port)
    try:
        sock.sendall(http_client.request_bytes('POST', case.endpoint, case.request(True)))
        reader = http_client.Reader(sock)
        status, _, _ = reader.read_head()
        if status != 200:
            raise Mismatch(f'{case.name}: HTTP {status}')
        events = 0
        for chunk in reader.read_chunks():
            events += chunk.count(b'data: ')
            if events >= read:
                break
    finally:
        http_client.reset(sock)
    with ctx.stats.lock:
        ctx.stats.reset_after_tokens += 1
    return 0


def disconnect_before_first_token(ctx, rng):
    """Sends a request and resets the connection at once, or after a few milliseconds."""
    case = rng.choice(ctx.cases['long_output'])
    sock = http_client.connect(ctx.port)
    sock.sendall(http_client.request_bytes('POST', case.endpoint, case.request(rng.random() < 0.5)))
    time.sleep(rng.choice((0, 0.001, 0.005)))
    http_client.reset(sock)
    return 0


# ---- slow senders: the server must close them within its timeouts and serve the others meanwhile ----

def _expect_closed(sock, timeout_s, what):
    took = http_client.wait_closed(sock, timeout_s + CLOSE_SLACK_S)
    if took is None:
        raise Mismatch(f'{what}: still open {timeout_s + CLOSE_SLACK_S} s later (timeout {timeout_s} s)')


def slowloris_header(ctx, rng):
    """A request header dribbled a byte every half second, never finished."""
    sock = http_client.connect(ctx.port)
    try:
        sock.sendall(b'POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n')
        start = time.monotonic()
        try:
            while time.monotonic() - start < HEADER_TIMEOUT_S + CLOSE_SLACK_S:
                sock.sendall(b'X')
                time.sleep(0.5)
        except OSError:
            return 0  # closed by the server
        raise Mismatch(f'slowloris header: still accepted bytes after {HEADER_TIMEOUT_S + CLOSE_SLACK_S} s')
    finally:
        sock.close()


def slow_body(ctx, rng):
    """A complete header, then a body that arrives a byte every half second."""
    sock = http_client.connect(ctx.port)
    try:
        sock.sendall(b'POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
                     b'Content-Length: 1000\r\n\r\n{"prompt": "')
        start = time.monotonic()
        try:
            while time.monotonic() - start < BODY_TIMEOUT_S + CLOSE_SLACK_S:
                sock.sendall(b'a')
                time.sleep(0.5)
        except OSError:
            return 0
        raise Mismatch(f'slow body: still accepted bytes after {BODY_TIMEOUT_S + CLOSE_SLACK_S} s')
    finally:
        sock.close()


def idle_keep_alive(ctx, rng):
    """One request on a kept-alive connection, then silence: closed after the header timeout."""
    sock = http_client.connect(ctx.port)
    try:
        sock.sendall(http_client.request_bytes('GET', '/health'))
        if http_client.Reader(sock).read_response().status != 200:
            raise Mismatch('idle keep-alive: /health failed')
        _expect_closed(sock, HEADER_TIMEOUT_S, 'idle keep-alive connection')
    finally:
        sock.close()
    return 0


# ---- bad input: a clear 4xx with OpenAI's error shape, never a crash ----

def _expect_error(response, status, needle, what):
    if response.status != status:
        raise Mismatch(f'{what}: HTTP {response.status} instead of {status}: {response.body[:200]!r}')
    error = response.json().get('error', {})
    if not isinstance(error.get('message'), str) or 'type' not in error:
        raise Mismatch(f'{what}: no OpenAI error object: {response.body[:200]!r}')
    if needle and needle not in error['message']:
        raise Mismatch(f'{what}: message {error["message"]!r} does not say {needle!r}')


def _send_raw(port, data):
    sock = http_client.connect(port)
    try:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered and closed before the rest arrived: the answer is still there to read
        return http_client.Reader(sock).read_response()
    finally:
        sock.close()


def _json_post(body):
    return http_client.request_bytes('POST', '/v1/completions', body, keep_alive=False)


def _long_prompt(ctx):
    return ctx.cases['long_prompt'][0].body['prompt']


MALFORMED = {
    'bad request line': (lambda ctx: b'GARBAGE\r\n\r\n', 400, 'Malformed HTTP request'),
    'bad chunk framing': (lambda ctx: b'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n'
                          b'ZZ\r\n', 400, 'Malformed HTTP request'),
    'truncated JSON': (lambda ctx: _json_post(b'{"prompt": '), 400, 'not valid JSON'),
    'invalid UTF-8': (lambda ctx: _json_post(b'{"prompt": "\xff\xfe", "max_tokens": 2}'), 400, None),
    'temperature out of range': (lambda ctx: _json_post({'prompt': 'x', 'temperature': 5}), 400, 'temperature'),
    'negative max_tokens': (lambda ctx: _json_post({'prompt': 'x', 'max_tokens': -3}), 400, 'max_tokens'),
    'n = 0': (lambda ctx: _json_post({'prompt': 'x', 'n': 0}), 400, None),
    'prompt of the wrong type': (lambda ctx: _json_post({'prompt': {'a': 1}}), 400, 'prompt'),
    'empty prompt': (lambda ctx: _json_post({'prompt': ''}), 400, 'prompt'),
    'token id outside the vocabulary': (lambda ctx: _json_post({'prompt': [1, 2, 999999]}), 400, None),
    'JSON nested 300 deep': (lambda ctx: _json_post(b'{"prompt": ' + b'[' * 300 + b']' * 300 + b'}'), 400,
                             'nesting'),
    'chat without messages': (lambda ctx: http_client.request_bytes('POST', '/v1/chat/completions',
                                                                    {'max_tokens': 3}, keep_alive=False), 400, None),
    'unknown route': (lambda ctx: http_client.request_bytes('POST', '/v1/nothing', {}, keep_alive=False), 404, None),
    'wrong method': (lambda ctx: http_client.request_bytes('GET', '/v1/completions', keep_alive=False), 405, None),
    'header over 64 KiB': (lambda ctx: http_client.request_bytes('GET', '/health', headers=['X-Big: ' + 'a' * 70000]),
                           431, 'header'),
    'over 100 header fields': (lambda ctx: http_client.request_bytes(
        'GET', '/health', headers=[f'X-H{i}: v' for i in range(120)]), 431, 'header fields'),
    # Can never fit: prompt + max_tokens beyond --max-model-len, the 400 names the limit.
    'prompt + max_tokens beyond the context': (lambda ctx: _json_post({'prompt': _long_prompt(ctx), 'max_tokens': 900}),
                                               400, f'maximum context length is {MAX_MODEL_LEN} tokens'),
    # A body over --max-request-body-bytes: announced (413 at the header), sent whole, or chunked.
    'Content-Length over the limit': (lambda ctx: b'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: '
                                      + str(2 * MAX_BODY_BYTES).encode() + b'\r\n\r\n', 413, None),
    'whole body over the limit': (lambda ctx: _json_post({'prompt': 'a' * (MAX_BODY_BYTES + 1000)}), 413, None),
    'chunked body over the limit': (lambda ctx: b'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: '
                                    b'chunked\r\n\r\n' + (b'10000\r\n' + b'a' * 0x10000 + b'\r\n') * 20 + b'0\r\n\r\n',
                                    413, None),
}
OVERSIZED = {'Content-Length over the limit', 'whole body over the limit', 'chunked body over the limit',
             'header over 64 KiB', 'over 100 header fields'}


def malformed(ctx, rng):
    name = rng.choice(sorted(MALFORMED))
    make, status, needle = MALFORMED[name]
    _expect_error(_send_raw(ctx.port, make(ctx)), status, needle, name)
    ctx.stats.count('oversized' if name in OVERSIZED else 'malformed', detail=name)
    return 0


# name -> (function, weight). The weights make every kind frequent in a 60 s run.
KINDS = {
    'completion': (completion, 16),
    'chat': (chat, 10),
    'seeded n > 1': (seeded_n, 8),
    'slow reader': (slow_reader, 4),
    'pipelined': (pipelined, 5),
    'disconnect mid-stream': (disconnect_mid_stream, 6),
    'disconnect before first token': (disconnect_before_first_token, 4),
    'slowloris header': (slowloris_header, 1),
    'slow body': (slow_body, 1),
    'idle keep-alive': (idle_keep_alive, 1),
    'bad input': (malformed, 14),
}


def run_one(ctx, rng, kind):
    function, _ = KINDS[kind]
    try:
        answered = function(ctx, rng)
        if kind != 'bad input':  # counted by its own kind (malformed or oversized)
            ctx.stats.count(kind, answered)
        else:
            with ctx.stats.lock:
                ctx.stats.answered_choices += answered
    except Mismatch as e:
        ctx.stats.fail(kind, str(e))
    except (OSError, http_client.ConnectionClosed, ValueError) as e:
        ctx.stats.fail(kind, f'{type(e).__name__}: {e}')


def worker(ctx, seed, deadline, index, workers):
    """Worker `index` of `workers` first runs its share of every kind once (so a short or slow run still
    covers the rare ones), then kinds drawn by their weights."""
    rng = random.Random(seed)
    names = sorted(KINDS)
    weights = [KINDS[n][1] for n in names]
    for kind in names[index::workers]:
        if time.monotonic() >= deadline or ctx.stop.is_set():
            return
        run_one(ctx, rng, kind)
    while time.monotonic() < deadline and not ctx.stop.is_set():
        run_one(ctx, rng, rng.choices(names, weights)[0])


def preemption_bursts(ctx, seed, deadline, burst=4):
    """Bursts of long prompts sent together: more KV pages than the cache holds, so some are preempted
    and recomputed; each answer must still equal the isolated one."""
    rng = random.Random(seed)
    while time.monotonic() < deadline and not ctx.stop.is_set():
        chosen = rng.sample(ctx.cases['long_prompt'], burst)
        threads = []
        for case in chosen:
            def one(case=case, stream=rng.random() < 0.5):
                try:
                    ctx.stats.count('long prompt (preemption burst)', soak_cases.run(ctx.port, case, stream))
                except Mismatch as e:
                    ctx.stats.fail('long prompt', str(e))
                except (OSError, http_client.ConnectionClosed, ValueError) as e:
                    ctx.stats.fail('long prompt', f'{type(e).__name__}: {e}')
            threads.append(threading.Thread(target=one))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ctx.stats.count('preemption burst')
        time.sleep(0.5)
