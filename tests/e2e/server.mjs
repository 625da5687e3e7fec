// Starts the real `dcuserve serve` on an ephemeral port and stops it. DCUSERVE_BIN: the executable;
// DCUSERVE_MODEL: the model folder (default: models/dcuserve-demo under the repository root).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const modelDir = process.env.DCUSERVE_MODEL || path.join(repoRoot, 'models/dcuserve-demo');

// servedModelName: null leaves the flag out, so the model's id is modelDir (what `--model` alone gives).
export async function startServer(extraArgs = [], { servedModelName = 'demo' } = {}) {
  const bin = process.env.DCUSERVE_BIN;
  if (!bin) throw new Error('set DCUSERVE_BIN to the dcuserve executable');
  const args = ['serve', '--model', modelDir, ...(servedModelName === null ? [] : ['--served-model-name', servedModelName]),
                '--host', '127.0.0.1', '--port', '0', '--device', process.env.DCUSERVE_DEVICE || 'cpu', ...extraArgs];
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 120 s:\n${log}`)), 120_000);
    const onData = (chunk) => {
      log += chunk.toString();
      const m = log.match(/on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited (${code}):\n${log}`)); });
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    port,
    baseURL: `http://127.0.0.1:${port}/v1`,
    url: (p) => `http://127.0.0.1:${port}${p}`,
    log: () => log,
    // SIGTERM must give a clean exit 0.
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

// The prompt length the server's /tokenize gives for a chat request's fields (messages, tools, ...): what a
// test compares with the usage of a request to see that all of it, tools included, reached the template.
export async function chatPromptTokens(server, fields) {
  const r = await fetch(server.url('/tokenize'), { method: 'POST', headers: { 'content-type': 'application/json' },
                                                   body: JSON.stringify(fields), signal: AbortSignal.timeout(60_000) });
  if (r.status !== 200) throw new Error(`/tokenize: ${r.status} ${await r.text()}`);
  return (await r.json()).count;
}
