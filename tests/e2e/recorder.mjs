// A recording HTTP proxy on 127.0.0.1 between a client and `dcuserve serve`: it forwards every request
// unchanged to the server's port and keeps what went each way, so a test can assert on what a real client
// sends (method, path, headers, JSON body) and on what it got back (status, headers, the SSE events).
// With DCUSERVE_E2E_RECORD_DIR set, close() also writes the exchanges there as <name>.json, to read by hand.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

// The `data:` payloads of a server-sent-events body, parsed as JSON where they are ("[DONE]" stays a string).
export function sseData(text) {
  const out = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart());
    if (!data.length) continue;
    const payload = data.join('\n');
    try { out.push(JSON.parse(payload)); } catch { out.push(payload); }
  }
  return out;
}

export async function startRecorder(targetPort, { name = 'exchanges' } = {}) {
  const exchanges = [];
  const pending = new Set();
  const server = http.createServer((req, res) => {
    const done = new Promise((resolve) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        const body = raw.toString('utf8');
        const ex = { method: req.method, path: req.url, headers: { ...req.headers }, body, json: null,
                     status: null, responseHeaders: null, response: '', events: [], error: null };
        try { ex.json = body ? JSON.parse(body) : null; } catch { /* not JSON: json stays null */ }
        exchanges.push(ex);
        const upstream = http.request({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url,
                                        headers: req.headers }, (ur) => {
          ex.status = ur.statusCode;
          ex.responseHeaders = { ...ur.headers };
          res.writeHead(ur.statusCode, ur.headers);
          const got = [];
          ur.on('data', (c) => { got.push(c); res.write(c); });
          ur.on('end', () => {
            ex.response = Buffer.concat(got).toString('utf8');
            if (/text\/event-stream/.test(ur.headers['content-type'] ?? '')) ex.events = sseData(ex.response);
            res.end();
            resolve();
          });
          ur.on('error', (e) => { ex.error = String(e); res.destroy(); resolve(); });
        });
        upstream.on('error', (e) => {
          ex.error = String(e);
          if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
          res.end(`recorder: ${e}`);
          resolve();
        });
        // A client that goes away mid-response: pass the disconnect on, as it would reach the server directly.
        res.on('close', () => { if (!res.writableFinished) { ex.error ??= 'client closed'; upstream.destroy(); resolve(); } });
        upstream.end(raw);
      });
    });
    pending.add(done);
    done.finally(() => pending.delete(done));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    port,
    baseURL: `http://127.0.0.1:${port}/v1`,
    exchanges,
    // The exchanges to one path (e.g. '/v1/chat/completions'), once every response has ended.
    async settled(path) {
      await Promise.all([...pending]);
      return path ? exchanges.filter((e) => e.path === path) : exchanges;
    },
    async close() {
      const dir = process.env.DCUSERVE_E2E_RECORD_DIR;
      if (dir) {
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(exchanges, null, 1));
      }
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
