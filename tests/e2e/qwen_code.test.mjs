// End-to-end: Qwen Code (@qwen-code/qwen-code, the pinned version in package.json) in its non-interactive prompt
// mode against the real `dcuserve serve` started with no flag but --model (and the host, port and device that
// server.mjs adds): the server's defaults for a Qwen3.5 model (qwen3 reasoning parser, qwen3_coder tool parser,
// auto tool choice) must be enough for an agent that offers tools and streams.
//
// Qwen Code talks to the server through recorder.mjs, a recording proxy on 127.0.0.1, and the test asserts on
// what it sent and on what it made of the answer. It runs with HOME and the working directory in a fresh
// temporary folder, a minimal environment (no OPENAI_* or proxy variables of the caller), and loopback_only.cjs
// preloaded, which refuses any connection that would leave this machine and logs it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { chatPromptTokens, modelDir, startServer } from './server.mjs';
import { startRecorder } from './recorder.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const qwenPackage = require('@qwen-code/qwen-code/package.json');
const qwenCli = path.join(path.dirname(require.resolve('@qwen-code/qwen-code/package.json')), qwenPackage.bin.qwen);

const systemPrompt = 'You are a helpful assistant.';
const prompt = 'Define compiler.';
const apiKey = 'dcuserve-e2e-key';
const maxOutputTokens = 64; // the demo model's answers are short; this bounds a rambling one on a slow CPU
const clientTimeoutMs = 300_000;

// In --bare mode Qwen Code 0.15.10 loads no settings file at all (createMinimalSettings), so its usage
// statistics (privacy.usageStatisticsEnabled, default on) cannot be turned off there: it tries to post them
// to this host. loopback_only.cjs refuses the connection, so nothing leaves; any other host fails the test.
const usageStatisticsHost = /(^|\.)rum\.aliyuncs\.com$/;

// Runs the client to its end (or kills its process group after timeoutMs) and returns code, stdout, stderr.
function runClient(args, { env, cwd, timeoutMs }) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => { stdout += c; });
    child.stderr.on('data', (c) => { stderr += c; });
    const timer = setTimeout(() => {
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
      reject(new Error(`client did not finish in ${timeoutMs / 1000} s\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr }); });
  });
}

describe(`Qwen Code ${qwenPackage.version} -p against dcuserve serve --model (no other flags)`, () => {
  let server;
  let recorder;
  let tmp;
  before(async () => {
    server = await startServer([], { servedModelName: null });
    recorder = await startRecorder(server.port, { name: 'qwen_code' });
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dcuserve-qwen-code-'));
  });
  after(async () => {
    await recorder?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
    const { code } = await server.stop();
    assert.equal(code, 0, 'clean exit on SIGTERM');
  });

  test('one streamed turn with tools offered completes without error', { timeout: clientTimeoutMs + 60_000 }, async (t) => {
    const home = path.join(tmp, 'home');
    const project = path.join(tmp, 'project');
    fs.mkdirSync(home);
    fs.mkdirSync(project);
    const netLog = path.join(tmp, 'net.jsonl');
    const env = {
      PATH: process.env.PATH, HOME: home, TMPDIR: tmp, LANG: 'C.UTF-8', NO_COLOR: '1', TERM: 'dumb',
      OPENAI_BASE_URL: recorder.baseURL, OPENAI_API_KEY: apiKey, OPENAI_MODEL: modelDir,
      QWEN_CODE_MAX_OUTPUT_TOKENS: String(maxOutputTokens),
      QWEN_CODE_DISABLE_PRECONNECT: '1', // (it only preconnects to the providers' default hosts anyway)
      DCUSERVE_E2E_NET_LOG: netLog,
    };
    const started = Date.now();
    const run = await runClient(['--require', path.join(here, 'loopback_only.cjs'), qwenCli,
                                 '--bare', '--system-prompt', systemPrompt, '--auth-type', 'openai',
                                 '--output-format', 'json', '-p', prompt],
                                { env, cwd: project, timeoutMs: clientTimeoutMs });
    const seconds = (Date.now() - started) / 1000;
    const diag = `exit ${run.code} after ${seconds} s\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}\nserver log:\n${server.log()}`;
    assert.equal(run.code, 0, diag);

    // Nothing but the loopback was dialled, apart from the usage statistics that --bare cannot turn off.
    const attempts = fs.existsSync(netLog)
      ? fs.readFileSync(netLog, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
    const statistics = (a) => usageStatisticsHost.test(a.host) && (a.kind === 'dns' || (a.kind === 'tcp' && a.port === 443));
    const unexpected = attempts.filter((a) => !statistics(a));
    assert.deepEqual(unexpected, [], 'connections off this machine (all were refused)');

    // What Qwen Code sent. One turn: a single request unless the model itself called a tool.
    const chats = await recorder.settled('/v1/chat/completions');
    assert.deepEqual(recorder.exchanges.map((e) => `${e.method} ${e.path}`),
                     chats.map(() => 'POST /v1/chat/completions'), 'no other endpoint is used');
    assert.ok(chats.length >= 1);
    const [first] = chats;
    const h = first.headers;
    assert.equal(h['content-type'], 'application/json');
    assert.equal(h.authorization, `Bearer ${apiKey}`);
    assert.match(h['user-agent'], new RegExp(`^QwenCode/${qwenPackage.version.replace(/\./g, '\\.')} \\(`));
    assert.equal(h.accept, 'application/json');
    const body = first.json;
    assert.deepEqual(Object.keys(body).sort(), ['max_tokens', 'messages', 'model', 'stream', 'stream_options', 'tools'],
                     'no tool_choice (the server\'s default "auto" applies), no sampling fields (the model\'s defaults)');
    assert.equal(body.model, modelDir);
    assert.equal(body.stream, true);
    assert.deepEqual(body.stream_options, { include_usage: true });
    assert.equal(body.max_tokens, maxOutputTokens);
    // The history: our system prompt, a context turn (date, OS, folder listing) answered by a canned assistant
    // message, then the prompt; user content comes as a list of text parts.
    assert.deepEqual(body.messages.map((m) => m.role), ['system', 'user', 'assistant', 'user']);
    assert.equal(body.messages[0].content, systemPrompt);
    for (const m of body.messages.filter((x) => x.role === 'user')) {
      assert.ok(Array.isArray(m.content) && m.content.every((p) => p.type === 'text' && typeof p.text === 'string'));
    }
    assert.equal(typeof body.messages[2].content, 'string');
    assert.deepEqual(body.messages[3].content, [{ type: 'text', text: prompt }]);
    // Tools in the Chat Completions shape; --bare offers the three core tools.
    const toolNames = body.tools.map((t) => t.function?.name).sort();
    assert.deepEqual(toolNames, ['edit', 'read_file', 'run_shell_command']);
    for (const t of body.tools) {
      assert.equal(t.type, 'function');
      assert.equal(typeof t.function.description, 'string');
      assert.equal(t.function.parameters.type, 'object');
      assert.equal(typeof t.function.parameters.properties, 'object');
    }

    // What the server answered: a 200 event stream ending in a usage chunk and [DONE].
    assert.equal(first.status, 200, first.response);
    assert.match(first.responseHeaders['content-type'], /^text\/event-stream/);
    const events = first.events;
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.slice(0, -1);
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === modelDir));
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    const usageChunk = chunks.at(-1);
    assert.deepEqual(usageChunk.choices, []);
    const deltas = chunks.flatMap((c) => c.choices.map((ch) => ch.delta));
    const finish = chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter(Boolean);
    assert.equal(finish.length, 1);
    assert.ok(['stop', 'length', 'tool_calls'].includes(finish[0]), finish[0]);
    const content = deltas.map((d) => d.content ?? '').join('');
    const reasoning = deltas.map((d) => d.reasoning_content ?? '').join('');
    // (No check that the content holds no <think>: Qwen Code samples at the model's temperature, and on a prompt
    // this long the demo model's answers are noise that may hold the tag; ai_sdk.test.mjs checks it greedily.)
    // All of the request, the tools included, went into the prompt.
    const withTools = await chatPromptTokens(server, { messages: body.messages, tools: body.tools });
    assert.equal(usageChunk.usage.prompt_tokens, withTools);
    assert.ok(withTools > await chatPromptTokens(server, { messages: body.messages }));

    // What Qwen Code made of it (--output-format json: the session's messages, the result last).
    let out;
    assert.doesNotThrow(() => { out = JSON.parse(run.stdout); }, diag);
    const result = out.at(-1);
    assert.equal(result.type, 'result');
    assert.equal(result.subtype, 'success', diag);
    assert.equal(result.is_error, false);
    if (finish[0] !== 'tool_calls') {
      assert.equal(chats.length, 1);
      assert.equal(result.num_turns, 1);
      assert.equal(result.result, content, 'the answer is the streamed content');
      assert.equal(result.usage.input_tokens, usageChunk.usage.prompt_tokens);
      assert.equal(result.usage.output_tokens, usageChunk.usage.completion_tokens);
      const thinking = out.filter((m) => m.type === 'assistant').flatMap((m) => m.message.content)
        .filter((p) => p.type === 'thinking').map((p) => p.thinking).join('');
      assert.equal(thinking, reasoning, 'reasoning_content reaches Qwen Code as thinking');
    }
    t.diagnostic(`Qwen Code ran ${seconds} s; prompt ${usageChunk.usage.prompt_tokens} tokens; ` +
                      `${attempts.length} refused usage-statistics connections`);
  });
});
