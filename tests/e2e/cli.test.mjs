// The command line: `dcuserve generate --chat --json` on the demo model reproduces transformers' greedy
// answers (ids) for the reference chats, `dcuserve info` / `tokenize` answer, and `dcuserve serve`
// logs what its start-up did.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
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
