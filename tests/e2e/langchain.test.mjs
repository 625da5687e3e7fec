// End-to-end: LangChain's ChatOpenAI (@langchain/openai, Chat Completions) against `dcuserve serve` (demo
// model, CPU) through the recording proxy: withStructuredOutput with each of its three methods, and
// bindTools with the tool_choice forms LangChain translates ('any' -> 'required', a bare name -> a named
// function) and parallel_tool_calls. Each test asserts on what LangChain sent (so the server path it
// exercises is known) and on what LangChain parsed out of the answer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatOpenAI } from '@langchain/openai';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { startServer } from './server.mjs';
import { startRecorder } from './recorder.mjs';

// Bounded strings: the demo model was never trained on JSON and would otherwise write free text until max_tokens.
const Word = z.object({
  word: z.string().max(24),
  part_of_speech: z.enum(['noun', 'verb', 'adjective', 'adverb']),
  syllables: z.number().int().min(1).max(9),
});
const prompt = 'Describe the word "compiler" as JSON.';
const bounded = { timeout: 300_000 };

describe('LangChain ChatOpenAI', () => {
  let server, recorder;
  before(async () => {
    server = await startServer();
    recorder = await startRecorder(server.port, { name: 'langchain' });
  });
  after(async () => {
    await recorder.close();
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  });

  // ChatOpenAI has no seed field: it goes into the body through modelKwargs.
  const chat = ({ seed, ...fields }) => new ChatOpenAI({
    model: 'demo', apiKey: 'unused', configuration: { baseURL: recorder.baseURL }, temperature: 0.8, maxTokens: 200,
    maxRetries: 0, modelKwargs: { seed }, ...fields,
  });
  // The request bodies LangChain sent while `run` ran.
  async function sent(run) {
    const from = recorder.exchanges.length;
    const value = await run();
    const all = await recorder.settled('/v1/chat/completions');
    return { value, bodies: all.slice(from).map((e) => e.json) };
  }

  test("withStructuredOutput method 'functionCalling' (strict off and on) forces the tool", bounded, async () => {
    for (const strict of [undefined, true]) {
      const { value, bodies } = await sent(() => chat({ seed: 1 })
        .withStructuredOutput(Word, { method: 'functionCalling', strict, includeRaw: true }).invoke(prompt));
      assert.equal(bodies.length, 1);
      assert.deepEqual(bodies[0].tool_choice, { type: 'function', function: { name: 'extract' } });
      assert.equal(bodies[0].tools[0].function.strict, strict);
      assert.equal(value.raw.response_metadata.finish_reason, 'tool_calls');
      assert.equal(value.raw.tool_calls.length, 1);
      Word.parse(value.parsed);
    }
  });

  // For a zod schema LangChain 1.5.8 sends strict: true even when told strict: false.
  test("withStructuredOutput method 'jsonSchema' sends a strict json_schema response format", bounded, async () => {
    const { value, bodies } = await sent(() => chat({ seed: 2 })
      .withStructuredOutput(Word, { method: 'jsonSchema', includeRaw: true }).invoke(prompt));
    assert.equal(bodies[0].response_format.type, 'json_schema');
    assert.equal(bodies[0].response_format.json_schema.strict, true);
    assert.equal(value.raw.response_metadata.finish_reason, 'stop');
    Word.parse(value.parsed);
  });

  // json_object sends no schema: the server can only promise a JSON object, so the zod schema is one any
  // object satisfies. Its strings are unbounded, and at most seeds the demo model's run past max_tokens
  // (finish_reason length, and LangChain cannot parse a cut-off object): seed 5 is one that ends.
  test("withStructuredOutput method 'jsonMode' sends json_object and parses the object", bounded, async () => {
    const AnyObject = z.record(z.string(), z.unknown());
    const { value, bodies } = await sent(() => chat({ seed: 5, maxTokens: 300 })
      .withStructuredOutput(AnyObject, { method: 'jsonMode', includeRaw: true }).invoke(prompt));
    assert.deepEqual(bodies[0].response_format, { type: 'json_object' });
    assert.equal(value.raw.response_metadata.finish_reason, 'stop');
    assert.deepEqual(value.parsed, JSON.parse(value.raw.content));
    assert.ok(Object.keys(value.parsed).length >= 1);
  });

  test('withStructuredOutput streamed: tool-call chunks and content chunks both parse', bounded, async () => {
    for (const method of ['functionCalling', 'jsonSchema']) {
      const { value, bodies } = await sent(async () => {
        let last;
        const model = chat({ seed: 3, streaming: true }).withStructuredOutput(Word, { method });
        for await (const chunk of await model.stream(prompt)) last = chunk;
        return last;
      });
      assert.equal(bodies[0].stream, true, method);
      Word.parse(value);
    }
  });

  test("bindTools: tool_choice 'any' with parallel_tool_calls false, and a bare tool name", bounded, async () => {
    const Args = z.object({ word: z.string().max(20) });
    const define = tool(async () => 'unused', { name: 'define', description: 'Look a word up', schema: Args });
    const cases = [
      { options: { tool_choice: 'any', parallel_tool_calls: false }, choice: 'required' },
      { options: { tool_choice: 'define' }, choice: { type: 'function', function: { name: 'define' } } },
    ];
    for (const { options, choice } of cases) {
      const { value, bodies } = await sent(() => chat({ seed: 4 }).bindTools([define], options)
        .invoke('What does "harbor" mean?'));
      assert.deepEqual(bodies[0].tool_choice, choice);
      assert.equal(bodies[0].parallel_tool_calls, options.parallel_tool_calls);
      assert.equal(value.tool_calls.length, 1, JSON.stringify(value.tool_calls));
      assert.equal(value.tool_calls[0].name, 'define');
      Args.parse(value.tool_calls[0].args);
    }
  });
});
