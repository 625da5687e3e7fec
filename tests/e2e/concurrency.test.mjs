// 64 concurrent streaming clients against the real server: every greedy output equals the same request
// run alone, and a client that disconnects mid-stream disturbs nobody.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer } from './server.mjs';

const prompts = [
  'Define compiler.', 'What does "harbor" mean?', 'Tell me a riddle.', 'Give me a quote.', 'Define river.',
  'What is a synonym of happy?', 'Define lantern.', 'What does "quiet" mean?',
];

describe('64 concurrent streaming clients', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(['--max-num-seqs', '64', '--max-model-len', '512']);
    client = new OpenAI({ baseURL: server.baseURL, apiKey: 'unused', maxRetries: 0, timeout: 600_000 });
  });
  after(async () => {
    const { code } = await server.stop();
    assert.equal(code, 0);
  });

  // 16 distinct requests (prompt x length), each sent by four of the 64 clients.
  const distinct = 16;
  const request = (i) => ({
    model: 'demo', messages: [{ role: 'user', content: prompts[i % prompts.length] }],
    max_completion_tokens: 24 + (Math.floor(i / prompts.length) % 2) * 8, temperature: 0,
  });

  async function streamed(i, signal) {
    const stream = await client.chat.completions.create({ ...request(i), stream: true }, { signal });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    return text;
  }

  test('each greedy output equals the same request run alone', async () => {
    const alone = [];
    for (let k = 0; k < distinct; ++k) alone.push((await client.chat.completions.create(request(k))).choices[0].message.content);
    const together = await Promise.all(Array.from({ length: 64 }, (_, i) => streamed(i % distinct)));
    for (let i = 0; i < 64; ++i) assert.equal(together[i], alone[i % distinct], `client ${i}`);
  });

  test('a client leaving mid-stream does not disturb the others', async () => {
    const expected = (await client.chat.completions.create(request(3))).choices[0].message.content;
    const leaving = Array.from({ length: 8 }, async (_, i) => {
      const controller = new AbortController();
      const stream = await client.chat.completions.create({ ...request(i), stream: true }, { signal: controller.signal });
      let chunks = 0;
      try {
        for await (const _ of stream) if (++chunks === 3) controller.abort();
      } catch (e) {
        assert.ok(controller.signal.aborted, `unexpected error ${e}`);
      }
    });
    const staying = Array.from({ length: 8 }, () => streamed(3));
    const [results] = await Promise.all([Promise.all(staying), Promise.all(leaving)]);
    for (const text of results) assert.equal(text, expected);
    // The server is still healthy and its caches drain.
    const metrics = await (await fetch(server.url('/metrics'))).text();
    assert.match(metrics, /vllm:num_requests_running\{[^}]*\} 0/);
  });
});
