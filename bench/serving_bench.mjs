#!/usr/bin/env node
// Serving benchmark against a running dcuserve (or any OpenAI-compatible) server: streaming
// completions at several concurrencies; prints throughput, time to first token and inter-token
// latency percentiles. No dependencies (Node 18+ fetch).
//
//   node bench/serving_bench.mjs --url http://127.0.0.1:8000 --concurrency 1,4,16,64 \
//        --requests 64 --prompt-tokens 128 --max-tokens 64 \
//        [--structured-outputs '{"json": {"type": "array", "items": {"type": "string"}}}']
// --structured-outputs sends that vLLM `structured_outputs` object with every request (constrained
// decoding; docs/STRUCTURED_OUTPUT.md).

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []));
const url = args.url ?? 'http://127.0.0.1:8000';
const concurrencies = (args.concurrency ?? '1,4,16').split(',').map(Number);
const requestsPerLevel = Number(args.requests ?? 32);
const promptTokens = Number(args['prompt-tokens'] ?? 128);
const maxTokens = Number(args['max-tokens'] ?? 64);
const structuredOutputs = args['structured-outputs'] ? JSON.parse(args['structured-outputs']) : undefined;

const model = (await (await fetch(`${url}/v1/models`)).json()).data[0].id;
// A prompt of promptTokens token ids (below 900: inside every vocabulary, the tiny fixture's too).
const prompt = Array.from({ length: promptTokens }, (_, i) => 100 + ((i * 7919) % 800));

async function oneRequest(seed) {
  const start = performance.now();
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    // logprobs: 0 makes the server send a chunk for every token, even one whose text is empty.
    body: JSON.stringify({ model, prompt, max_tokens: maxTokens, ignore_eos: true, temperature: 1.0, seed, logprobs: 0,
                           stream: true, stream_options: { include_usage: true },
                           ...(structuredOutputs && { structured_outputs: structuredOutputs }) }),
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const arrivals = [];
  let tokens = 0, buffer = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const data = JSON.parse(event.slice(6));
      if (data.usage) tokens = data.usage.completion_tokens;
      if (data.choices?.length && data.choices[0].text !== undefined) arrivals.push(performance.now());
    }
  }
  return { start, end: performance.now(), arrivals, tokens };
}

const percentile = (values, p) => {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const fmt = (x) => x.toFixed(1).padStart(8);

console.log(`server ${url}, model ${model}, prompt ${promptTokens} tokens, ${maxTokens} output tokens, ` +
            `${requestsPerLevel} requests per level` +
            (structuredOutputs ? `, structured_outputs ${JSON.stringify(structuredOutputs)}` : ''));
console.log('concurrency   req/s   out tok/s   TTFT p50   p90    p99 (ms)   ITL p50    p90    p99 (ms)');
for (const concurrency of concurrencies) {
  let next = 0;
  const results = [];
  const begin = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < requestsPerLevel) results.push(await oneRequest(next++));
  }));
  const seconds = (performance.now() - begin) / 1000;
  const ttft = results.map((r) => r.arrivals[0] - r.start);
  const itl = results.flatMap((r) => r.arrivals.slice(1).map((t, i) => t - r.arrivals[i]));
  const outTokens = results.reduce((n, r) => n + r.tokens, 0);
  console.log(`${String(concurrency).padStart(11)} ${fmt(results.length / seconds)} ${fmt(outTokens / seconds)}   ` +
              `${fmt(percentile(ttft, 50))}${fmt(percentile(ttft, 90))}${fmt(percentile(ttft, 99))}   ` +
              `${fmt(percentile(itl, 50))}${fmt(percentile(itl, 90))}${fmt(percentile(itl, 99))}`);
}
