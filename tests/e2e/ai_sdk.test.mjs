// End-to-end: the Vercel AI SDK (`ai` with `@ai-sdk/openai-compatible`, versions pinned in package.json) against
// the real `dcuserve serve` started with no flag but --model (the server's Qwen3.5 defaults: qwen3 reasoning
// parser, qwen3_coder tool parser, auto tool choice). generateText and streamText with tools and a multi-step
// tool loop (stopWhen), through recorder.mjs, a recording proxy on 127.0.0.1, so that the test asserts on what
// the SDK sends and on how what the server answered reached the SDK's results.
//
// The multi-step loop. The demo model was never trained on tool calls, so it does not call tools by itself
// (when it does, the generic loop checks below still follow every step). To run the loop deterministically and
// honestly the tests start from the SDK's own human-in-the-loop state: the history holds an assistant tool call
// with a tool-approval request, and the user's approval. generateText / streamText then do what the loop does
// after a model's tool call: run the tool's execute(), append its result, and call the model again with the
// assistant tool_calls and the tool message in the history; the server must take that history and answer. Nothing
// in the traffic is faked: every request the SDK makes goes to the real server, and every answer is the model's.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { generateText, streamText, stepCountIs, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { z } from 'zod';
import { chatPromptTokens, modelDir, startServer } from './server.mjs';
import { startRecorder } from './recorder.mjs';

const require = createRequire(import.meta.url);
const aiVersion = require('ai/package.json').version;
const providerVersion = require('@ai-sdk/openai-compatible/package.json').version;

const apiKey = 'dcuserve-e2e-key';
const callTimeoutMs = 180_000; // one generateText / streamText, all its steps
const bounded = { timeout: callTimeoutMs + 60_000 };
const chatPath = '/v1/chat/completions';

// A weather tool whose calls are recorded; `needsApproval` makes the SDK stop for a human's yes before running it.
function weatherTool({ needsApproval = false } = {}) {
  const calls = [];
  const t = tool({
    description: 'Get the current weather in a city',
    inputSchema: z.object({ city: z.string().describe('The city') }),
    needsApproval,
    execute: async ({ city }) => {
      calls.push(city);
      return { city, temperature_c: 21, conditions: 'sunny' };
    },
  });
  return { tool: t, calls };
}

// The SDK's state after a model called get_weather({city: "Paris"}) and a human approved it.
const approvedHistory = [
  { role: 'user', content: 'What is the weather in Paris?' },
  { role: 'assistant', content: [
    { type: 'tool-call', toolCallId: 'call_weather_1', toolName: 'get_weather', input: { city: 'Paris' } },
    { type: 'tool-approval-request', approvalId: 'approval_1', toolCallId: 'call_weather_1' },
  ] },
  { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: 'approval_1', approved: true }] },
];

// What every request of the SDK carries, streaming or not.
function assertCommonRequest(ex, { stream }) {
  assert.equal(ex.method, 'POST');
  assert.equal(ex.path, chatPath);
  assert.equal(ex.headers['content-type'], 'application/json');
  assert.equal(ex.headers.authorization, `Bearer ${apiKey}`);
  // generateText's requests say `ai/<version> ai-sdk/provider-utils/... runtime/node.js/...`, streamText's
  // `ai-sdk/openai-compatible/<version> ai-sdk/provider-utils/... runtime/node.js/...` (as the SDK builds them).
  const ua = ex.headers['user-agent'];
  assert.ok(ua.includes(stream ? `ai-sdk/openai-compatible/${providerVersion}` : `ai/${aiVersion}`), ua);
  assert.match(ua, /ai-sdk\/provider-utils\/\S+ runtime\/node\.js\/v/);
  const b = ex.json;
  assert.equal(b.model, modelDir);
  assert.equal(b.temperature, 0);
  assert.equal(b.max_tokens, 48);
  if (stream) {
    assert.equal(b.stream, true);
    assert.deepEqual(b.stream_options, { include_usage: true });
  } else {
    assert.equal(b.stream, undefined);
  }
  // The tool as a Chat Completions function with the JSON schema that zod gives, and tool_choice "auto" said
  // explicitly (a server without a tool parser refuses that with a 400).
  assert.equal(b.tool_choice, 'auto');
  assert.equal(b.tools.length, 1);
  const [t] = b.tools;
  assert.equal(t.type, 'function');
  assert.equal(t.function.name, 'get_weather');
  assert.equal(t.function.description, 'Get the current weather in a city');
  assert.equal(t.function.parameters.type, 'object');
  assert.deepEqual(t.function.parameters.properties.city, { type: 'string', description: 'The city' });
  assert.deepEqual(t.function.parameters.required, ['city']);
  assert.equal(ex.status, 200, ex.response);
}

// The assistant tool call and tool result as the SDK sends them back in the history.
function assertToolTurn(messages, { id, name, args, result }) {
  const a = messages.findIndex((m) => m.role === 'assistant' && m.tool_calls?.some((c) => c.id === id));
  assert.ok(a >= 0, `assistant tool call ${id} in ${JSON.stringify(messages)}`);
  const call = messages[a].tool_calls.find((c) => c.id === id);
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, name);
  assert.equal(typeof call.function.arguments, 'string', 'arguments travel as a JSON string');
  assert.deepEqual(JSON.parse(call.function.arguments), args);
  const toolMessage = messages.slice(a + 1).find((m) => m.role === 'tool' && m.tool_call_id === id);
  assert.ok(toolMessage, `tool message for ${id}`);
  assert.equal(typeof toolMessage.content, 'string');
  assert.deepEqual(JSON.parse(toolMessage.content), result);
}

// The server's answer to one request, from the recorded body: content, reasoning, tool calls, finish, usage.
function answerOf(ex) {
  if (!ex.json.stream) {
    const r = JSON.parse(ex.response);
    const m = r.choices[0].message;
    return { content: m.content ?? '', reasoning: m.reasoning_content ?? '', toolCalls: m.tool_calls ?? [],
             finish: r.choices[0].finish_reason, usage: r.usage };
  }
  assert.equal(ex.events.at(-1), '[DONE]');
  const chunks = ex.events.slice(0, -1);
  const deltas = chunks.flatMap((c) => c.choices.map((ch) => ch.delta));
  const usageChunk = chunks.find((c) => c.usage);
  assert.deepEqual(usageChunk.choices, [], 'usage comes in its own chunk');
  return { content: deltas.map((d) => d.content ?? '').join(''),
           reasoning: deltas.map((d) => d.reasoning_content ?? '').join(''),
           toolCalls: deltas.flatMap((d) => d.tool_calls ?? []),
           finish: chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter(Boolean).at(-1),
           usage: usageChunk.usage };
}

const sdkFinish = { stop: 'stop', length: 'length', tool_calls: 'tool-calls' };

// One SDK step per request, in order: the step's text, reasoning, finish and usage are the server's, and a step
// that ended in tool calls ran the tools and sent their results in the next request (the loop).
async function assertSteps(server, steps, exchanges, { stream }) {
  assert.equal(steps.length, exchanges.length, 'one request per step');
  for (const [i, step] of steps.entries()) {
    const ex = exchanges[i];
    assertCommonRequest(ex, { stream });
    const ans = answerOf(ex);
    // All of the request, the tool included, went into the prompt.
    const withTools = await chatPromptTokens(server, { messages: ex.json.messages, tools: ex.json.tools });
    assert.equal(ans.usage.prompt_tokens, withTools);
    assert.ok(withTools > await chatPromptTokens(server, { messages: ex.json.messages }));
    assert.equal(step.text, ans.content);
    assert.ok(!step.text.includes('<think>') && !step.text.includes('</think>'), 'thinking is split off');
    assert.equal(step.reasoningText ?? '', ans.reasoning);
    assert.equal(step.finishReason, sdkFinish[ans.finish], `finish ${ans.finish}`);
    assert.equal(step.usage.inputTokens, ans.usage.prompt_tokens);
    assert.equal(step.usage.outputTokens, ans.usage.completion_tokens);
    assert.equal(step.toolCalls.length, new Set(ans.toolCalls.map((c) => c.index ?? c.id)).size);
    if (step.finishReason === 'tool-calls' && i + 1 < steps.length) {
      for (const [j, c] of step.toolCalls.entries()) {
        assertToolTurn(exchanges[i + 1].json.messages, { id: c.toolCallId, name: c.toolName, args: c.input,
                                                         result: step.toolResults[j].output });
      }
    }
  }
}

describe(`AI SDK ai@${aiVersion} + @ai-sdk/openai-compatible@${providerVersion} against dcuserve serve --model`, () => {
  let server;
  let recorder;
  let model;
  before(async () => {
    server = await startServer([], { servedModelName: null });
    recorder = await startRecorder(server.port, { name: 'ai_sdk' });
    const provider = createOpenAICompatible({ name: 'dcuserve', baseURL: recorder.baseURL, apiKey, includeUsage: true });
    model = provider.chatModel(modelDir);
  });
  after(async () => {
    await recorder?.close();
    const { code } = await server.stop();
    assert.equal(code, 0, 'clean exit on SIGTERM');
  });

  // The requests of one SDK call: those recorded while it ran.
  async function recorded(fn) {
    const from = recorder.exchanges.length;
    const value = await fn();
    const all = await recorder.settled();
    return { value, exchanges: all.slice(from) };
  }
  const common = () => ({ model, temperature: 0, maxOutputTokens: 48, maxRetries: 0, stopWhen: stepCountIs(3) });

  test('generateText with a tool: the tool reaches the server, the steps are its answers', bounded, async () => {
    const weather = weatherTool();
    const { value: r, exchanges } = await recorded(() => generateText({
      ...common(), tools: { get_weather: weather.tool }, prompt: 'What is the weather in Paris?',
      abortSignal: AbortSignal.timeout(callTimeoutMs),
    }));
    assert.ok(exchanges.length >= 1);
    assert.deepEqual(exchanges[0].json.messages, [{ role: 'user', content: 'What is the weather in Paris?' }]);
    await assertSteps(server, r.steps, exchanges, { stream: false });
    assert.equal(r.text, r.steps.at(-1).text);
    assert.equal(weather.calls.length, r.steps.flatMap((s) => s.toolCalls).length);
  });

  test('streamText with a tool: streamed deltas and usage reach the SDK', bounded, async () => {
    const weather = weatherTool();
    const { value, exchanges } = await recorded(async () => {
      let streamError;
      const r = streamText({
        ...common(), tools: { get_weather: weather.tool }, system: 'You are a helpful assistant.',
        prompt: 'Define compiler.', abortSignal: AbortSignal.timeout(callTimeoutMs),
        onError: ({ error }) => { streamError = error; },
      });
      let text = '';
      for await (const delta of r.textStream) text += delta;
      if (streamError) throw streamError;
      return { text, steps: await r.steps, usage: await r.totalUsage };
    });
    assert.deepEqual(exchanges[0].json.messages, [{ role: 'system', content: 'You are a helpful assistant.' },
                                                  { role: 'user', content: 'Define compiler.' }]);
    await assertSteps(server, value.steps, exchanges, { stream: true });
    assert.equal(value.text, value.steps.map((s) => s.text).join(''));
    const answers = exchanges.map(answerOf);
    assert.equal(value.usage.inputTokens, answers.reduce((n, a) => n + a.usage.prompt_tokens, 0));
    assert.equal(value.usage.outputTokens, answers.reduce((n, a) => n + a.usage.completion_tokens, 0));
  });

  for (const mode of ['generateText', 'streamText']) {
    test(`${mode} multi-step loop: an approved tool call runs, its result goes to the server, the model answers`,
      bounded, async () => {
        const weather = weatherTool({ needsApproval: true });
        const { value, exchanges } = await recorded(async () => {
          const args = { ...common(), tools: { get_weather: weather.tool }, messages: approvedHistory,
                         abortSignal: AbortSignal.timeout(callTimeoutMs) };
          if (mode === 'generateText') return generateText(args);
          let streamError;
          const r = streamText({ ...args, onError: ({ error }) => { streamError = error; } });
          await r.consumeStream();
          if (streamError) throw streamError;
          return { steps: await r.steps, text: await r.text, response: await r.response };
        });
        assert.deepEqual(weather.calls, ['Paris'], 'the SDK ran the approved tool once, before calling the model');
        assert.ok(exchanges.length >= 1);
        // The first request: the user's question, the assistant's tool call, and the tool's result.
        const messages = exchanges[0].json.messages;
        assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant', 'tool']);
        assertToolTurn(messages, { id: 'call_weather_1', name: 'get_weather', args: { city: 'Paris' },
                                   result: { city: 'Paris', temperature_c: 21, conditions: 'sunny' } });
        await assertSteps(server, value.steps, exchanges, { stream: mode === 'streamText' });
        assert.equal(value.text, value.steps.at(-1).text);
        // The conversation the SDK hands back to continue from holds the server's answer.
        const last = value.response.messages.at(-1);
        assert.equal(last.role, 'assistant');
      });
  }
});
