"""A raw-socket HTTP/1.1 client: what the soak test needs and urllib cannot do (pipelining, resets,
slow reading, byte-by-byte sending, chunked request bodies, malformed requests). Python 3 stdlib only."""

import json
import socket
import struct
import time

# Every blocking socket operation of a well-behaved client gives the server this long: generous, so a
# loaded two-core machine is slow, not a failure.
DEFAULT_TIMEOUT_S = 120.0


class ConnectionClosed(Exception):
    """The server closed (or reset) the connection before a whole response arrived."""


class Response:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers  # lower-case names
        self.body = body        # bytes (the de-chunked body)

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f'Response({self.status}, {self.body[:200]!r})'


def connect(port, timeout=DEFAULT_TIMEOUT_S, receive_buffer=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer:  # before connect, so the window is small from the start (a slow reader)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(timeout)
    sock.connect(('127.0.0.1', port))
    return sock


def reset(sock):
    """Closes with a TCP reset (SO_LINGER 0): a client that aborts, not one that half-closes."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    except OSError:
        pass
    sock.close()


def request_bytes(method, path, body=None, headers=None, version='1.1', keep_alive=True):
    lines = [f'{method} {path} HTTP/{version}', 'Host: 127.0.0.1']
    if body is not None:
        if not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode()
        lines += ['Content-Type: application/json', f'Content-Length: {len(body)}']
    if not keep_alive:
        lines.append('Connection: close')
    lines += list(headers or [])
    return ('\r\n'.join(lines) + '\r\n\r\n').encode() + (body or b'')


class Reader:
    """Reads responses off one connection, in order (so it also reads pipelined responses)."""

    def __init__(self, sock, chunk_size=65536, pause_s=0.0):
        self.sock = sock
        self.buffer = b''
        self.chunk_size = chunk_size  # a slow reader takes little at a time...
        self.pause_s = pause_s        # ... and waits between reads

    def _fill(self):
        if self.pause_s:
            time.sleep(self.pause_s)
        try:
            data = self.sock.recv(self.chunk_size)
        except ConnectionResetError as e:
            raise ConnectionClosed(f'reset: {e}') from e
        if not data:
            raise ConnectionClosed('EOF')
        self.buffer += data

    def _line(self):
        while b'\r\n' not in self.buffer:
            self._fill()
        line, self.buffer = self.buffer.split(b'\r\n', 1)
        return line

    def _exactly(self, n):
        while len(self.buffer) < n:
            self._fill()
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def read_head(self):
        status_line = self._line().decode('latin-1')
        while status_line.startswith('HTTP/1.1 100'):  # 100 Continue, then the real response
            while self._line():
                pass
            status_line = self._line().decode('latin-1')
        parts = status_line.split(' ', 2)
        if len(parts) < 2 or not parts[0].startswith('HTTP/'):
            raise ValueError(f'bad status line {status_line!r}')
        headers = {}
        while True:
            line = self._line().decode('latin-1')
            if not line:
                break
            name, _, value = line.partition(':')
            headers[name.strip().lower()] = value.strip()
        return int(parts[1]), parts[2] if len(parts) > 2 else '', headers

    def read_chunks(self):
        """Yields the chunks of a chunked body as they arrive."""
        while True:
            size = int(self._line().split(b';')[0], 16)
            if size == 0:
                while self._line():  # trailers
                    pass
                return
            data = self._exactly(size)
            if self._line() != b'':
                raise ValueError('chunk not followed by CRLF')
            yield data

    def read_response(self):
        status, reason, headers = self.read_head()
        if headers.get('transfer-encoding', '').lower() == 'chunked':
            body = b''.join(self.read_chunks())
        elif 'content-length' in headers:
            body = self._exactly(int(headers['content-length']))
        else:  # close-delimited (HTTP/1.0 streams)
            body = self.buffer
            self.buffer = b''
            try:
                while True:
                    self._fill()
                    body += self.buffer
                    self.buffer = b''
            except ConnectionClosed:
                pass
        return Response(status, reason, headers, body)


def call(port, method, path, body=None, timeout=DEFAULT_TIMEOUT_S):
    """One request on a fresh connection."""
    sock = connect(port, timeout)
    try:
        sock.sendall(request_bytes(method, path, body, keep_alive=False))
        return Reader(sock).read_response()
    finally:
        sock.close()


def sse_payloads(body):
    """The `data:` payloads of an SSE body, in order ('[DONE]' included as a string)."""
    out = []
    for event in body.decode('utf-8').split('\n\n'):
        for line in event.split('\n'):
            if line.startswith('data: '):
                out.append(line[len('data: '):])
    return out


def wait_closed(sock, limit_s):
    """Seconds until the server closes the connection (EOF or reset), or None if it did not in limit_s."""
    start = time.monotonic()
    sock.settimeout(0.5)
    while time.monotonic() - start < limit_s:
        try:
            if not sock.recv(4096):
                return time.monotonic() - start
        except socket.timeout:
            continue
        except OSError:
            return time.monotonic() - start
    return None
