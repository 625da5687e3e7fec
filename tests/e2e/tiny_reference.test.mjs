// The tiny random-weight fixture through the HTTP API against Hugging Face transformers: greedy
// completions equal the reference continuations, and echo + logprobs of each reference prompt equal the
// log-softmax of the reference logits. Run with DCUSERVE_MODEL=tests/data/tiny-qwen35.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { modelDir, startServer } from './server.mjs';

const reference = JSON.parse(fs.readFileSync(path.join(modelDir, 'reference.json'), 'utf8'));
const cases = [...reference.prompts, ...reference.chats];

// Reads one F32 tensor of a safetensors file: { shape, data: Float32Array }.
function readTensor(file, name) {
  const bytes = fs.readFileSync(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8'));
  const entry = header[name];
  const [begin, end] = entry.data_offsets;
  const start = 8 + headerLength + begin;
  const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset + start, bytes.byteOffset + start + (end - begin)));
  return { shape: entry.shape, data };
}

function logSoftmaxAt(row, id) {
  let max = -Infinity;
  for (const x of row) max = Math.max(max, x);
  let sum = 0;
  for (const x of row) sum += Math.exp(x - max);
  return row[id] - max - Math.log(sum);
}

describe('tiny fixture through the API', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(['--max-model-len', '1024']);
    client = new OpenAI({ baseURL: server.baseURL, apiKey: 'unused', maxRetries: 0, timeout: 600_000 });
  });
  after(async () => {
    await server.stop();
  });

  for (const c of cases) {
    test(`greedy continuation of ${c.key}`, async () => {
      // Special tokens are kept on both sides, so equal texts mean equal ids (the reference's own
      // greedy_text was decoded with a transformers-specific notion of which tokens to skip).
      const r = await client.completions.create({
        model: 'demo', prompt: c.ids, max_tokens: c.greedy_ids.length, temperature: 0, ignore_eos: true,
        skip_special_tokens: false,
      });
      assert.equal(r.usage.completion_tokens, c.greedy_ids.length);
      const detok = await fetch(server.url('/detokenize'), {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo', tokens: c.greedy_ids }),
      });
      assert.equal(r.choices[0].text, (await detok.json()).prompt);
    });

    test(`echo + logprobs of ${c.key} equal the reference log-softmax`, async () => {
      const r = await client.completions.create({
        model: 'demo', prompt: c.ids, max_tokens: 1, temperature: 0, echo: true, logprobs: 1,
      });
      const { shape, data } = readTensor(path.join(modelDir, 'reference.safetensors'), `${c.key}.logits`);
      const vocab = shape[1];
      const got = r.choices[0].logprobs.token_logprobs;
      assert.equal(got[0], null);
      for (let i = 1; i < c.ids.length; ++i) {
        const expected = logSoftmaxAt(data.subarray((i - 1) * vocab, i * vocab), c.ids[i]);
        assert.ok(Math.abs(got[i] - expected) < 1e-3, `${c.key} position ${i}: ${got[i]} vs ${expected}`);
      }
    });
  }
});
