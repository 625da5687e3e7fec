"""The well-formed requests of the soak test and their expected answers.

A case is one request body whose answer is fixed: greedy (temperature 0), or sampled with a seed (the
engine's seeded sampling does not depend on what shares the batch). Its expected answer is what the
server gave it sent alone, before any load; under load it must come back the same, streamed or not."""

import json
import random

import http_client

WORDS = ('harbor compiler tree river lantern granite orbit meadow violin cipher glacier pepper anchor '
         'falcon quartz saddle thunder marble willow beacon canyon ember fossil harvest island jasmine '
         'kettle lagoon mosaic nectar oyster prism quiver raven summit tundra umbrella velvet walnut '
         'yarrow zephyr basalt cobalt dune estuary fjord geyser heron iris juniper kelp lichen mango').split()


class Case:
    def __init__(self, name, endpoint, body):
        self.name = name
        self.endpoint = endpoint  # '/v1/completions' or '/v1/chat/completions'
        self.body = body          # without 'stream'
        self.expected = None      # [(text, reasoning, finish_reason)] by choice index
        self.usage = None         # {'prompt_tokens', 'completion_tokens'}

    @property
    def chat(self):
        return self.endpoint == '/v1/chat/completions'

    def request(self, stream, include_usage=False):
        body = dict(self.body, stream=stream)
        if stream and include_usage:
            body['stream_options'] = {'include_usage': True}
        return body


class Mismatch(Exception):
    """A well-formed request got a wrong or malformed answer."""


def make_cases(seed, long_prompt_words):
    rng = random.Random(seed)
    words = list(WORDS)
    rng.shuffle(words)
    cases = {'completion': [], 'chat': [], 'seeded_n': [], 'long_output': [], 'long_prompt': []}
    for i, w in enumerate(words[:16]):
        cases['completion'].append(Case(f'completion-{w}', '/v1/completions', {
            'prompt': f'Define {w}.', 'max_tokens': rng.randint(8, 48), 'temperature': 0,
            'ignore_eos': i % 2 == 0}))
    for w in words[16:24]:
        cases['chat'].append(Case(f'chat-{w}', '/v1/chat/completions', {
            'messages': [{'role': 'user', 'content': f'What does "{w}" mean?'}],
            'max_tokens': rng.randint(8, 40), 'temperature': 0}))
    for i, w in enumerate(words[24:30]):
        cases['seeded_n'].append(Case(f'seeded-n-{w}', '/v1/completions', {
            'prompt': f'Tell me about {w}.', 'max_tokens': 24, 'n': rng.randint(2, 4), 'temperature': 0.8,
            'top_p': 0.95, 'seed': 1000 + i, 'ignore_eos': True}))
    # Long outputs: the streams a client cuts mid-way, and the ones a slow reader drains.
    for w in words[30:34]:
        cases['long_output'].append(Case(f'long-output-{w}', '/v1/completions', {
            'prompt': f'Write a story about a {w}.', 'max_tokens': 160, 'temperature': 0, 'ignore_eos': True}))
    # Long prompts: a few of them at once need more KV pages than the cache has, so some are preempted.
    for i in range(6):
        text = ' '.join(rng.choice(WORDS) for _ in range(long_prompt_words))
        cases['long_prompt'].append(Case(f'long-prompt-{i}', '/v1/completions', {
            'prompt': f'Notes {i}: {text}\nSummary:', 'max_tokens': 200, 'temperature': 0, 'ignore_eos': True}))
    return cases


def choices_of_response(case, body):
    """[(text, reasoning, finish_reason)] by index, from a non-streamed answer, after checking its shape."""
    r = json.loads(body)
    want_object = 'chat.completion' if case.chat else 'text_completion'
    if r.get('object') != want_object:
        raise Mismatch(f'{case.name}: object {r.get("object")!r}')
    n = case.body.get('n', 1)
    choices = sorted(r['choices'], key=lambda c: c['index'])
    if [c['index'] for c in choices] != list(range(n)):
        raise Mismatch(f'{case.name}: choice indices {[c["index"] for c in choices]}')
    out = []
    for c in choices:
        if case.chat:
            m = c['message']
            if m.get('role') != 'assistant':
                raise Mismatch(f'{case.name}: role {m.get("role")!r}')
            out.append((m.get('content') or '', m.get('reasoning_content') or '', c['finish_reason']))
        else:
            out.append((c['text'], '', c['finish_reason']))
    usage = r.get('usage') or {}
    return out, {'prompt_tokens': usage.get('prompt_tokens'), 'completion_tokens': usage.get('completion_tokens')}


def choices_of_stream(case, payloads):
    """The same from the SSE payloads of a streamed answer, after checking the framing and chunk shapes."""
    if not payloads or payloads[-1] != '[DONE]':
        raise Mismatch(f'{case.name}: the stream does not end with [DONE]')
    want_object = 'chat.completion.chunk' if case.chat else 'text_completion'
    n = case.body.get('n', 1)
    text = [''] * n
    reasoning = [''] * n
    finish = [None] * n
    usage = None
    ids = set()
    for p in payloads[:-1]:
        chunk = json.loads(p)
        ids.add(chunk['id'])
        if chunk.get('object') != want_object:
            raise Mismatch(f'{case.name}: chunk object {chunk.get("object")!r}')
        if not chunk['choices']:  # the usage chunk
            usage = chunk.get('usage')
            continue
        for c in chunk['choices']:
            i = c['index']
            if finish[i] is not None:
                raise Mismatch(f'{case.name}: choice {i} has output after its finish_reason')
            if case.chat:
                d = c['delta']
                text[i] += d.get('content') or ''
                reasoning[i] += d.get('reasoning_content') or ''
            else:
                text[i] += c['text']
            finish[i] = c.get('finish_reason')
    if len(ids) != 1:
        raise Mismatch(f'{case.name}: chunks carry {len(ids)} ids')
    out = list(zip(text, reasoning, finish))
    return out, ({'prompt_tokens': usage['prompt_tokens'], 'completion_tokens': usage['completion_tokens']}
                 if usage else None)


def check(case, got, usage):
    if got != case.expected:
        raise Mismatch(f'{case.name}: answer differs from the one sent alone:\n  got      {got!r}\n'
                       f'  expected {case.expected!r}')
    if usage is not None and usage != case.usage:
        raise Mismatch(f'{case.name}: usage {usage} instead of {case.usage}')


def run(port, case, stream, include_usage=False, reader=None, sock=None):
    """Sends `case` on a new connection (or on `sock`) and checks the answer against the expected one.
    Returns the number of choices answered."""
    own = sock is None
    sock = sock or http_client.connect(port)
    try:
        sock.sendall(http_client.request_bytes('POST', case.endpoint, case.request(stream, include_usage),
                                               keep_alive=not own))
        r = (reader or http_client.Reader(sock)).read_response()
    finally:
        if own:
            sock.close()
    verify(case, r, stream)
    return case.body.get('n', 1)


def verify(case, response, stream):
    if response.status != 200:
        raise Mismatch(f'{case.name}: HTTP {response.status}: {response.body[:300]!r}')
    if stream:
        got, usage = choices_of_stream(case, http_client.sse_payloads(response.body))
    else:
        got, usage = choices_of_response(case, response.body)
    check(case, got, usage)


def record_expected(port, case):
    """The answer `case` gets sent alone: what it must get under load."""
    r = http_client.call(port, 'POST', case.endpoint, case.request(False))
    if r.status != 200:
        raise RuntimeError(f'{case.name}: HTTP {r.status} {r.body[:300]!r}')
    case.expected, case.usage = choices_of_response(case, r.body)
