// Adds to package-lock.json the entries of the platform packages of @teddyzhu/clipboard (an optional dependency
// of @qwen-code/qwen-code) that the registry this project reaches does not have, so that `npm ci` accepts the
// lock (see README.md). Run after an `npm install` that rewrote the lock: node lock_missing_platforms.mjs
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const lockPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'package-lock.json');
const lock = JSON.parse(fs.readFileSync(lockPath, 'utf8'));
const parent = lock.packages['node_modules/@teddyzhu/clipboard'];
if (!parent) throw new Error('no @teddyzhu/clipboard in the lock');
const platforms = {
  'darwin-arm64': { os: ['darwin'], cpu: ['arm64'] },
  'darwin-x64': { os: ['darwin'], cpu: ['x64'] },
  'linux-arm64-gnu': { os: ['linux'], cpu: ['arm64'], libc: ['glibc'] },
  'linux-x64-gnu': { os: ['linux'], cpu: ['x64'], libc: ['glibc'] },
  'win32-arm64-msvc': { os: ['win32'], cpu: ['arm64'] },
  'win32-x64-msvc': { os: ['win32'], cpu: ['x64'] },
};
let added = 0;
for (const [suffix, p] of Object.entries(platforms)) {
  const key = `node_modules/@teddyzhu/clipboard-${suffix}`;
  if (lock.packages[key]) continue;
  lock.packages[key] = { version: parent.version, cpu: p.cpu, ...(p.libc ? { libc: p.libc } : {}), license: 'MIT',
                         optional: true, os: p.os, engines: parent.engines };
  added++;
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
fs.writeFileSync(lockPath, JSON.stringify(lock, null, 2) + '\n');
console.log(`lock_missing_platforms: ${added} entries added`);
