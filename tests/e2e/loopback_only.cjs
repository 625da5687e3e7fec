// Preloaded into client processes (`node --require loopback_only.cjs ...`) so that they can reach nothing but this
// machine: every TCP connection to a host other than the loopback (127.0.0.0/8, ::1, localhost), every UDP
// datagram to one and every DNS lookup of another name is refused before it leaves, and written as one JSON line to $DCUSERVE_E2E_NET_LOG, which the
// test then asserts is empty. Unix sockets and pipes pass. `fetch`, undici, http(s), tls and grpc all connect
// through net.Socket.prototype.connect, so patching it covers them; children inherit the preload through execArgv.
'use strict';
const net = require('node:net');
const dgram = require('node:dgram');
const dns = require('node:dns');
const fs = require('node:fs');

const logFile = process.env.DCUSERVE_E2E_NET_LOG;

function isLoopback(host) {
  if (host === undefined || host === null || host === '') return true; // Node's default host is localhost
  const h = String(host).toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\./.test(h) || /^::ffff:127\./.test(h);
}

function record(kind, host, port) {
  const line = JSON.stringify({ kind, host, port, pid: process.pid, stack: new Error().stack.split('\n').slice(2, 8) });
  if (logFile) fs.appendFileSync(logFile, line + '\n');
  else process.stderr.write(`loopback_only: blocked ${line}\n`);
}

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(...args) {
  // net.connect passes its normalized [options, callback] array; users pass (options[, cb]), (port[, host][, cb])
  // or (path[, cb]).
  let first = Array.isArray(args[0]) ? args[0][0] : args[0];
  let host;
  let port;
  if (first && typeof first === 'object') {
    if (first.path !== undefined && first.path !== null) return connect.apply(this, args);
    host = first.host;
    port = first.port;
  } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    port = first;
    host = typeof args[1] === 'string' ? args[1] : undefined;
  } else {
    return connect.apply(this, args); // a pipe path
  }
  if (isLoopback(host)) return connect.apply(this, args);
  record('tcp', host, port);
  const err = Object.assign(new Error(`loopback_only: connection to ${host}:${port} refused`), { code: 'ECONNREFUSED' });
  process.nextTick(() => this.destroy(err));
  return this;
};

const send = dgram.Socket.prototype.send;
dgram.Socket.prototype.send = function guardedSend(...args) {
  // (msg[, offset, length], port[, address][, callback])
  const portIndex = typeof args[1] === 'number' && typeof args[2] === 'number' ? 3 : 1;
  const address = typeof args[portIndex + 1] === 'string' ? args[portIndex + 1] : undefined;
  if (isLoopback(address)) return send.apply(this, args);
  record('udp', address, args[portIndex]);
  const cb = args.find((a) => typeof a === 'function');
  if (cb) process.nextTick(cb, new Error('loopback_only: datagram refused'));
};

// Name lookups of other hosts never reach a resolver either (a client that resolves before connecting).
const lookup = dns.lookup;
dns.lookup = function guardedLookup(hostname, ...rest) {
  if (isLoopback(hostname)) return lookup.call(this, hostname, ...rest);
  record('dns', hostname, undefined);
  const cb = rest.find((a) => typeof a === 'function');
  const err = Object.assign(new Error(`loopback_only: lookup of ${hostname} refused`), { code: 'ENOTFOUND' });
  if (cb) process.nextTick(cb, err);
  return {};
};
const promisesLookup = dns.promises.lookup;
dns.promises.lookup = function guardedPromisesLookup(hostname, ...rest) {
  if (isLoopback(hostname)) return promisesLookup.call(this, hostname, ...rest);
  record('dns', hostname, undefined);
  return Promise.reject(Object.assign(new Error(`loopback_only: lookup of ${hostname} refused`), { code: 'ENOTFOUND' }));
};
