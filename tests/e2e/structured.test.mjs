// End-to-end: structured output with real clients against `dcuserve serve` (demo model, CPU): the official
// openai client's chat.completions.parse() with a zod response format, and the Vercel AI SDK's
// generateObject / streamObject (json_schema response formats) and toolChoice 'required'. Every answer
// must parse and validate against its zod schema with finish_reason stop; the schemas bound their strings
// (the demo model was never trained on JSON and would otherwise write free text until max_tokens); the
// same with speculative decoding on.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { generateObject, generateText, streamObject, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { z } from 'zod';
import { startServer } from './server.mjs';

const Word = z.object({
  word: z.string().max(24),
  part_of_speech: z.enum(['noun', 'verb', 'adjective', 'adverb']),
  syllables: z.number().int().min(1).max(9),
});
const bounded = { timeout: 300_000 };

async function parseWords(server, seeds) {
  const client = new OpenAI({ baseURL: server.baseURL, apiKey: 'unused', maxRetries: 0 });
  for (const seed of seeds) {
    const completion = await client.chat.completions.parse({
      model: 'demo', seed, temperature: 0.8, max_tokens: 200,
      messages: [{ role: 'user', content: 'Describe the word "compiler" as JSON.' }],
      response_format: zodResponseFormat(Word, 'word'),
    });
    const choice = completion.choices[0];
    assert.equal(choice.finish_reason, 'stop', `seed ${seed}: ${choice.message.content}`);
    assert.ok(choice.message.parsed, `seed ${seed}: parsed`);
    Word.parse(choice.message.parsed);
  }
}

describe('structured output with real clients', () => {
  let server;
  before(async () => { server = await startServer(); });
  after(async () => { assert.deepEqual(await server.stop(), { code: 0, signal: null }); });

  test('openai chat.completions.parse() with a zod schema', bounded, async () => {
    await parseWords(server, [1, 2, 3]);
  });

  test('AI SDK generateObject and streamObject', bounded, async () => {
    const provider = createOpenAICompatible({ name: 'dcuserve', baseURL: server.baseURL, supportsStructuredOutputs: true });
    const model = provider.chatModel('demo');
    const generated = await generateObject({ model, schema: Word, prompt: 'Describe the word "river".', seed: 4,
                                             temperature: 0.8, maxOutputTokens: 200 });
    assert.equal(generated.finishReason, 'stop');
    Word.parse(generated.object);
    const streamed = streamObject({ model, schema: Word, prompt: 'Describe the word "quickly".', seed: 5,
                                    temperature: 0.8, maxOutputTokens: 200 });
    let partials = 0;
    for await (const _ of streamed.partialObjectStream) ++partials;
    Word.parse(await streamed.object);
    assert.ok(partials >= 1);
    assert.equal(await streamed.finishReason, 'stop');
  });

  test("AI SDK toolChoice 'required' calls a tool in the model's own format", bounded, async () => {
    const provider = createOpenAICompatible({ name: 'dcuserve', baseURL: server.baseURL });
    const result = await generateText({
      model: provider.chatModel('demo'), seed: 6, temperature: 0.8, maxOutputTokens: 200,
      prompt: 'What does "harbor" mean?',
      tools: { define: tool({ description: 'Look a word up', inputSchema: z.object({ word: z.string().max(20) }) }) },
      toolChoice: 'required',
    });
    assert.equal(result.toolCalls.length >= 1, true, JSON.stringify(result.response?.messages));
    assert.equal(result.toolCalls[0].toolName, 'define');
    z.object({ word: z.string().max(20) }).parse(result.toolCalls[0].input);
  });
});

// Speculative decoding verifies MTP drafts row by row through the same constraint: still valid.
test('chat.completions.parse() with speculative decoding on', bounded, async () => {
  const server = await startServer(['--speculative-config', '{"method": "mtp", "num_speculative_tokens": 2}']);
  try {
    await parseWords(server, [1, 2, 3]);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});
