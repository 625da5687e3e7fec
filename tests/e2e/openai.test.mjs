// End-to-end: the official `openai` Node client against the real `dcuserve serve` on the demo model.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { modelDir, startServer } from './server.mjs';

// The F32 tensors of a safetensors file: {name: {data: Float32Array, cols}}.
function readSafetensorsF32(file) {
  const bytes = fs.readFileSync(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8'));
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__' || t.dtype !== 'F32') continue;
    const [begin, end] = t.data_offsets;
    const raw = bytes.subarray(8 + headerLength + begin, 8 + headerLength + end);
    out[name] = { data: new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length)), cols: t.shape[1] };
  }
  return out;
}

// Greedy answers of Hugging Face transformers (float32) for the demo model's chat prompts.
const reference = JSON.parse(fs.readFileSync(path.join(modelDir, 'reference.json'), 'utf8'));

describe('dcuserve serve (no api key, qwen3 reasoning parser, hermes tools)', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(['--reasoning-parser', 'qwen3', '--tool-call-parser', 'hermes',
                                '--enable-auto-tool-choice']);
    client = new OpenAI({ baseURL: server.baseURL, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    const { code } = await server.stop();
    assert.equal(code, 0, 'clean exit on SIGTERM');
  });

  test('models', async () => {
    const models = await client.models.list();
    assert.deepEqual(models.data.map((m) => m.id), ['demo']);
    // The demo model advertises the family's context, so agent-sized requests (a 23,508-token prompt
    // with max_tokens 32,000) are not refused for length.
    assert.equal(models.data[0].max_model_len, 262144);
    const one = await client.models.retrieve('demo');
    assert.equal(one.id, 'demo');
  });

  test('completion from token ids reproduces the reference greedy answer', async () => {
    const chat = reference.chats[0];
    const r = await client.completions.create({
      model: 'demo', prompt: chat.ids, max_tokens: chat.greedy_ids.length, temperature: 0,
    });
    assert.equal(r.choices[0].text, chat.greedy_text.replace('<|im_end|>', ''));
    assert.equal(r.usage.prompt_tokens, chat.ids.length);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    assert.match(r.id, /^cmpl-/);
  });

  test('completion streaming equals non-streaming (greedy), with usage', async () => {
    const req = { model: 'demo', prompt: 'Define compiler.', max_tokens: 12, temperature: 0 };
    const whole = await client.completions.create(req);
    const stream = await client.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage = null;
    let finish = null;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text += c.text;
        if (c.finish_reason) finish = c.finish_reason;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, whole.choices[0].text);
    assert.equal(finish, whole.choices[0].finish_reason);
    assert.deepEqual(usage, whole.usage);
  });

  test('echo with logprobs gives prompt logprobs (lm-eval loglikelihood)', async () => {
    const r = await client.completions.create({
      model: 'demo', prompt: 'The cat sat', max_tokens: 1, temperature: 0, echo: true, logprobs: 1,
    });
    const lp = r.choices[0].logprobs;
    assert.ok(r.choices[0].text.startsWith('The cat sat'));
    assert.equal(lp.token_logprobs[0], null);
    assert.equal(lp.tokens.length, r.usage.prompt_tokens + 1);
    for (const v of lp.token_logprobs.slice(1)) assert.ok(v <= 0);
  });

  test('prompt_logprobs equal the log-softmax of the reference prompt logits (transformers)', async () => {
    const logits = readSafetensorsF32(path.join(modelDir, 'reference.safetensors'));
    for (const [c, chat] of reference.chats.entries()) {
      const rows = logits[`chat${c}.logits`];  // [prompt length, V]: row i predicts token i + 1
      const r = await client.completions.create({
        model: 'demo', prompt: chat.ids, max_tokens: 1, temperature: 0, prompt_logprobs: 2,
      });
      const p = r.choices[0].prompt_logprobs;
      assert.equal(p.length, chat.ids.length);
      assert.equal(p[0], null);
      for (let i = 1; i < chat.ids.length; ++i) {
        const row = rows.data.subarray((i - 1) * rows.cols, i * rows.cols);
        const max = row.reduce((a, b) => Math.max(a, b), -Infinity);
        const norm = max + Math.log(row.reduce((a, x) => a + Math.exp(x - max), 0));
        const id = chat.ids[i];
        const entry = p[i][String(id)];
        assert.ok(Math.abs(entry.logprob - (row[id] - norm)) < 2e-3, `chat ${c} position ${i}: ${entry.logprob} vs ${row[id] - norm}`);
        const higher = row.filter((x) => x > row[id]).length;
        const near = row.filter((x) => Math.abs(x - row[id]) < 1e-3).length;  // ties within the tolerance
        assert.ok(entry.rank >= 1 + higher - near && entry.rank <= 1 + higher + near, `rank ${entry.rank} vs ${1 + higher}`);
        assert.equal(Object.keys(p[i]).length >= 2, true, 'the top 2 are listed beside the prompt token');
      }
    }
  });

  test('chat matches the reference, thinking split into reasoning_content', async () => {
    const chat = reference.chats[1];
    const r = await client.chat.completions.create({
      model: 'demo', messages: chat.messages, max_completion_tokens: chat.greedy_ids.length, temperature: 0,
    });
    const m = r.choices[0].message;
    const answer = chat.greedy_text.split('</think>')[1].replace('<|im_end|>', '').trim();
    assert.equal((m.content || '').trim(), answer);
    assert.equal(r.usage.prompt_tokens, chat.ids.length);
    assert.match(r.id, /^chatcmpl-/);
  });

  test('chat streaming equals non-streaming', async () => {
    const req = { model: 'demo', messages: [{ role: 'user', content: 'Tell me a riddle.' }], max_tokens: 20,
                  temperature: 0, chat_template_kwargs: { enable_thinking: false } };
    const whole = await client.chat.completions.create(req);
    const stream = await client.chat.completions.create({ ...req, stream: true });
    let content = '';
    let role = null;
    for await (const chunk of stream) {
      const d = chunk.choices[0]?.delta ?? {};
      if (d.role) role = d.role;
      content += d.content ?? '';
    }
    assert.equal(role, 'assistant');
    assert.equal(content, whole.choices[0].message.content ?? '');
  });

  test('chat logprobs', async () => {
    const r = await client.chat.completions.create({
      model: 'demo', messages: [{ role: 'user', content: 'Define tree.' }], max_tokens: 5, temperature: 0,
      logprobs: true, top_logprobs: 3,
    });
    const content = r.choices[0].logprobs.content;
    assert.equal(content.length, r.usage.completion_tokens);
    for (const t of content) {
      assert.equal(t.top_logprobs.length, 3);
      assert.ok(t.logprob <= 0);
      assert.ok(t.top_logprobs[0].logprob >= t.logprob - 1e-4, 'greedy picks the most likely token');
    }
  });

  test('tools with auto tool choice are accepted', async () => {
    const r = await client.chat.completions.create({
      model: 'demo', messages: [{ role: 'user', content: 'What is the weather in Paris?' }], max_tokens: 16,
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object',
        properties: { city: { type: 'string' } } } } }],
    });
    assert.ok(['stop', 'length', 'tool_calls'].includes(r.choices[0].finish_reason));
  });

  test('stop strings end the text', async () => {
    const r = await client.completions.create({ model: 'demo', prompt: 'Define compiler.', max_tokens: 40,
                                                temperature: 0, stop: [' '] });
    assert.ok(!r.choices[0].text.includes(' '));
  });

  test('n > 1 with a seed: n distinct samples, the same again for the same seed', async () => {
    const req = { model: 'demo', prompt: 'The', max_tokens: 16, temperature: 1.5, n: 3, seed: 1234 };
    const first = await client.completions.create(req);
    const again = await client.completions.create(req);
    assert.equal(first.choices.length, 3);
    assert.deepEqual(first.choices.map((c) => c.index).sort(), [0, 1, 2]);
    const texts = (r) => [...r.choices].sort((a, b) => a.index - b.index).map((c) => c.text);
    assert.deepEqual(texts(again), texts(first));
    assert.ok(new Set(texts(first)).size > 1, 'the n samples differ');
    const other = await client.completions.create({ ...req, seed: 99 });
    assert.notDeepEqual(texts(other), texts(first));
  });

  test('errors have OpenAI shape and status', async () => {
    await assert.rejects(client.completions.create({ model: 'demo', prompt: 'x', temperature: 5 }),
      (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'temperature');
    await assert.rejects(client.completions.create({ model: 'nope', prompt: 'x' }),
      (e) => e instanceof OpenAI.NotFoundError);
    await assert.rejects(client.completions.create({ model: 'demo', prompt: 'x'.repeat(100), max_tokens: 10_000_000 }),
      (e) => e.status === 400 && /maximum context length/.test(e.message));
    await assert.rejects(client.chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array', uniqueItems: true } } } }),
      (e) => e.status === 400 && e.param === 'response_format' && /'uniqueItems'/.test(e.message));
  });

  test('metrics, health, tokenize', async () => {
    assert.equal((await fetch(server.url('/health'))).status, 200);
    const metrics = await (await fetch(server.url('/metrics'))).text();
    assert.match(metrics, /vllm:generation_tokens_total\{model_name="demo"\} [1-9]/);
    const tok = await (await fetch(server.url('/tokenize'), { method: 'POST', body: JSON.stringify(
      { messages: reference.chats[0].messages }) })).json();
    assert.deepEqual(tok.tokens, reference.chats[0].ids);
  });
});

describe('dcuserve serve --api-key (and no parser flags: the parsers of the model)', () => {
  let server;
  before(async () => { server = await startServer(['--api-key', 'sekrit']); });
  after(async () => { await server.stop(); });

  test('without flags a Qwen3.5 model gets the qwen3 reasoning and qwen3_coder tool parsers', async () => {
    assert.match(server.log(), /--reasoning-parser qwen3 \(from the model/);
    assert.match(server.log(), /--tool-call-parser qwen3_coder --enable-auto-tool-choice \(from the model/);
    const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'sekrit', maxRetries: 0 });
    const chat = reference.chats[1];
    const r = await client.chat.completions.create({
      model: 'demo', messages: chat.messages, max_completion_tokens: chat.greedy_ids.length, temperature: 0,
    });
    const m = r.choices[0].message;
    assert.ok(!(m.content || '').includes('</think>'), `the think block stays out of the answer: ${m.content}`);
    assert.equal((m.content || '').trim(), chat.greedy_text.split('</think>')[1].replace('<|im_end|>', '').trim());
    const tools = await client.chat.completions.create({
      model: 'demo', messages: [{ role: 'user', content: 'Weather in Paris?' }], max_tokens: 8, tool_choice: 'auto',
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
    });
    assert.ok(['stop', 'length', 'tool_calls'].includes(tools.choices[0].finish_reason));
  });

  test('requests need the key', async () => {
    const bad = new OpenAI({ baseURL: server.baseURL, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
    const good = new OpenAI({ baseURL: server.baseURL, apiKey: 'sekrit', maxRetries: 0 });
    assert.equal((await good.models.list()).data[0].id, 'demo');
  });
});
