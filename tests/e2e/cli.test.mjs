// The command line: `dcuserve generate --chat --json` on the demo model reproduces transformers' greedy
// answers (ids) for the reference chats, `dcuserve info` / `tokenize` answer, and `dcuserve serve`
// logs what its start-up did.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { modelDir, startServer } from './server.mjs';

const bin = process.env.DCUSERVE_BIN;
const reference = JSON.parse(fs.readFileSync(path.join(modelDir, 'reference.json'), 'utf8'));
const run = (args, input) => execFileSync(bin, args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });

for (const chat of reference.chats.filter((c) => c.messages.length === 1 && c.messages[0].role === 'user')) {
  test(`generate --chat --json: ${chat.key}`, () => {
    const out = JSON.parse(run(['generate', '--model', modelDir, '--device', 'cpu', '--chat', '--json',
                                '--prompt', chat.messages[0].content, '--max-tokens', String(chat.greedy_ids.length)]));
    assert.deepEqual(out.ids, chat.greedy_ids);
  });
}

test('generate --prompt-ids equals --chat for the rendered ids', () => {
  const chat = reference.chats[0];
  const out = JSON.parse(run(['generate', '--model', modelDir, '--device', 'cpu', '--json',
                              '--prompt-ids', chat.ids.join(','), '--max-tokens', '8']));
  assert.deepEqual(out.ids, chat.greedy_ids.slice(0, 8));
});

test('tokenize reads a JSON array of texts on stdin', () => {
  const chat = reference.chats[0];
  const ids = JSON.parse(run(['tokenize', '--tokenizer', modelDir], JSON.stringify([chat.rendered])));
  assert.deepEqual(ids, [chat.ids]);
});

test('info prints the model and memory needs', () => {
  const out = run(['info', '--model', modelDir]);
  assert.match(out, /parameters:\s+0\.008B/);
  assert.match(out, /KV cache per token/);
  assert.match(out, /tensor-parallel:\s+1, 2 \(/);  // 4/2 attention heads, 2 GDN key heads
});

test('a bad model folder is a clear error, exit 1', () => {
  assert.throws(() => run(['generate', '--model', '/nonexistent', '--prompt-ids', '1']),
    (e) => e.status === 1 && /config\.json/.test(e.stderr));
});

// Out of memory at start-up: a KV cache beyond what the process may map (ulimit -v, 1 GB) fails its
// allocation for real, and serve says which memory, how much and what to change, and exits 1.
test('a KV cache that cannot be allocated is a clear start-up error naming its size, exit 1', () => {
  assert.throws(() => execFileSync('bash', ['-c', 'ulimit -v 1000000 && exec "$0" "$@"', bin, 'serve', '--model', modelDir,
                                            '--device', 'cpu', '--host', '127.0.0.1', '--port', '0',
                                            '--kv-cache-memory-bytes', '1610612736'],
                                    // Few OpenMP threads: their stacks count towards the limit too.
                                    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000,
                                      env: { ...process.env, OMP_NUM_THREADS: '2' } }),
    (e) => e.status === 1 && /^error: cannot allocate 1\.50 GiB of host memory for the KV cache and GDN state \(out of host memory allocating \d+ bytes\); give it less with --kv-cache-memory-bytes/m.test(e.stderr));
});

// Out of host memory: a model of several TB (the demo's config.json scaled up, random weights) is refused
// before anything is loaded, with what it needs and what is available.
test('a model too large for host memory is a clear start-up error, exit 1', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcuserve-huge-'));
  try {
    for (const f of ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json'])
      fs.copyFileSync(path.join(modelDir, f), path.join(dir, f));
    const config = JSON.parse(fs.readFileSync(path.join(modelDir, 'config.json'), 'utf8'));
    Object.assign(config.text_config, { hidden_size: 65536, intermediate_size: 1048576 });
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
    assert.throws(() => run(['serve', '--model', dir, '--load-format', 'dummy', '--device', 'cpu', '--host', '127.0.0.1',
                             '--port', '0']),
      (e) => e.status === 1 && /^error: the model needs about [\d.]+ GiB of host memory on the CPU backend \(weights [\d.]+ GiB\), but only [\d.]+ [GM]iB is available \(MemAvailable in \/proc\/meminfo\)/m.test(e.stderr));
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
});

test('serve logs the weights read, the cache and the start-up time, as vLLM-style lines', async () => {
  const server = await startServer();
  const log = server.log();
  assert.deepEqual(await server.stop(), { code: 0, signal: null });
  const line = (message) => new RegExp(`^INFO \\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d ${message}$`, 'm');
  assert.match(log, line('weights: \\d+\\.\\d\\d GB read in \\d+\\.\\d\\d s \\(\\d+\\.\\d\\d GB/s\\)'));
  assert.match(log, line('cache: \\d+ KV pages of 16 tokens \\(\\d+ tokens, F32 KV\\), \\d+ GDN state slots \\(1 per sequence\\), \\S+ [KMG]iB'));
  assert.match(log, line('serving demo .* on http://127\\.0\\.0\\.1:\\d+; start-up took \\d+\\.\\d\\d s'));
  assert.doesNotMatch(log, /\r/);  // a pipe gets plain lines, no progress bar
});
