"""A real `dcuserve serve` process on 127.0.0.1 for the soak test: start, stop, and what /proc and
/metrics say about it."""

import os
import re
import signal
import subprocess
import time

import http_client


class ServerProcess:
    def __init__(self, binary, model, extra_args, log_path):
        self.log_path = log_path
        args = [binary, 'serve', '--model', model, '--host', '127.0.0.1', '--port', '0', '--device', 'cpu',
                *extra_args]
        self.command = args
        self._log = open(log_path, 'wb')
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
        self.port = self._wait_for_port(limit_s=120)

    def _wait_for_port(self, limit_s):
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            m = re.search(r'on http://127\.0\.0\.1:(\d+)', self.log())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError(f'server exited ({self.proc.returncode}) at start-up:\n{self.log()}')
            time.sleep(0.1)
        raise RuntimeError(f'server did not start in {limit_s} s:\n{self.log()}')

    def log(self):
        with open(self.log_path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')

    def alive(self):
        return self.proc.poll() is None

    def rss_kib(self):
        with open(f'/proc/{self.proc.pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
        raise RuntimeError('no VmRSS in /proc/PID/status')

    def open_fds(self):
        return len(os.listdir(f'/proc/{self.proc.pid}/fd'))

    def metrics(self):
        """The server's /metrics as {'name{labels}': value}, labels without model_name."""
        r = http_client.call(self.port, 'GET', '/metrics')
        if r.status != 200:
            raise RuntimeError(f'/metrics: {r.status}')
        out = {}
        for line in r.body.decode().splitlines():
            if not line or line.startswith('#'):
                continue
            key, _, value = line.rpartition(' ')
            key = re.sub(r'model_name="(?:[^"\\]|\\.)*",?', '', key).replace('{}', '')
            out[key] = float(value)
        return out

    def stop(self, limit_s=60):
        """SIGTERM; the server must exit 0 within limit_s. Returns the exit code."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(limit_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._log.close()
        return code


# The counters the soak test checks, by finish reason.
REASONS = ('stop', 'length', 'abort', 'error')


def finished(metrics, reason):
    return metrics.get(f'vllm:request_success_total{{finished_reason="{reason}"}}', 0.0)


def submitted(metrics):
    return metrics.get('dcuserve:requests_submitted_total', 0.0)
