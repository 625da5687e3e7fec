#!/usr/bin/env bash
# Multi-host tensor parallelism on one machine with 2 GPUs, as two processes that only share TCP and
# NCCL: node 1 on GPU 1 and node 0 (the HTTP server) on GPU 0, --tensor-parallel-size 2 --nnodes 2.
#   1. A single-GPU (TP1) server answers a few greedy completions (temperature 0, 16 tokens).
#   2. The two-node group answers the same requests: every text must be identical. Stopping node 0
#      (SIGTERM) must make node 1 exit 0.
#   3. Failure: a new group; node 1 is killed (SIGKILL) during a long generation. Node 0 must answer
#      that request, and the next, with an error within 60 s (no hang), and still answer /health.
# Exits non-zero on any difference or failed check. Needs a CUDA build with NCCL, curl and python3.
#
#   scripts/multihost_smoke.sh BINARY MODEL_DIR
#   (environment: TP1_PORT, NODE0_PORT, MASTER_PORT to move the ports; logs stay in $LOG_DIR)
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 BINARY MODEL_DIR" >&2
  exit 2
fi
BIN=$(realpath "$1")
MODEL=$(realpath "$2")
TP1_PORT=${TP1_PORT:-18101}
NODE0_PORT=${NODE0_PORT:-18102}
MASTER_PORT=${MASTER_PORT:-29561}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$LOG_DIR"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}  # no NVLink multicast (not available on every machine)
PROMPTS=("The capital of France is" "Define compiler." "def fibonacci(n):" "Once upon a time, in a small village,")
echo "logs in $LOG_DIR"

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

die() {
  echo "FAIL: $*" >&2
  exit 1
}

# start NAME GPU ARGS...: a dcuserve serve process on one GPU (which it sees as GPU 0), in the background.
start() {
  local name=$1 gpu=$2
  shift 2
  CUDA_VISIBLE_DEVICES=$gpu "$BIN" serve --model "$MODEL" --device cuda "$@" >"$LOG_DIR/$name.log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}

# wait_healthy PORT PID NAME: until /health answers (10 minutes at most, loading may be slow).
wait_healthy() {
  local port=$1 pid=$2 name=$3
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { tail -n 20 "$LOG_DIR/$name.log" >&2; die "$name exited while starting"; }
    sleep 1
  done
  die "$name did not become healthy in 10 minutes"
}

# wait_exit PID NAME: the exit status of a process that should stop by itself (60 s at most).
wait_exit() {
  local pid=$1 name=$2
  for _ in $(seq 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  kill -0 "$pid" 2>/dev/null && die "$name did not exit within 60 s"
  local status=0
  wait "$pid" || status=$?
  return "$status"
}

# stop PID NAME: SIGTERM and the exit status (60 s at most).
stop() {
  kill -TERM "$1" 2>/dev/null || true
  wait_exit "$1" "$2"
}

# request PORT PROMPT MAX_TOKENS: prints "HTTP_CODE<TAB>TEXT_OR_ERROR"; 60 s at most.
request() {
  local body
  body=$(python3 -c 'import json, sys; print(json.dumps({"prompt": sys.argv[1], "max_tokens": int(sys.argv[2]),
                                                         "temperature": 0, "ignore_eos": True}))' "$2" "$3")
  curl -s --max-time 60 -o "$LOG_DIR/response.json" -w '%{http_code}' -H 'content-type: application/json' \
    -d "$body" "http://127.0.0.1:$1/v1/completions" >"$LOG_DIR/code" || echo "no answer within 60 s" >"$LOG_DIR/code"
  python3 - "$(cat "$LOG_DIR/code")" "$LOG_DIR/response.json" <<'EOF'
import json, sys
code, path = sys.argv[1], sys.argv[2]
try:
    body = json.load(open(path))
except Exception:
    body = {}
if "choices" in body:
    print(f"{code}\t{body['choices'][0]['text']!r}")
else:
    print(f"{code}\t{body.get('error', {}).get('message', body)!r}")
EOF
}

# answers PORT: the greedy answer to every prompt, one line each.
answers() {
  for p in "${PROMPTS[@]}"; do request "$1" "$p" 16; done
}

start_group() {
  start node1 1 --tensor-parallel-size 2 --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$MASTER_PORT"
  NODE1=$LAST_PID
  start node0 0 --tensor-parallel-size 2 --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port "$MASTER_PORT" \
    --port "$NODE0_PORT"
  NODE0=$LAST_PID
  wait_healthy "$NODE0_PORT" "$NODE0" node0
  kill -0 "$NODE1" 2>/dev/null || die "node 1 exited (see $LOG_DIR/node1.log)"
}

echo "== 1. TP1 on GPU 0"
start tp1 0 --port "$TP1_PORT"
TP1=$LAST_PID
wait_healthy "$TP1_PORT" "$TP1" tp1
answers "$TP1_PORT" | tee "$LOG_DIR/tp1.txt"
stop "$TP1" tp1 || die "the TP1 server exited with status $?"
grep -qv '^200' "$LOG_DIR/tp1.txt" && die "the TP1 server failed a request"

echo "== 2. TP2 over two nodes: node 1 on GPU 1, node 0 on GPU 0"
start_group
answers "$NODE0_PORT" | tee "$LOG_DIR/tp2.txt"
diff "$LOG_DIR/tp1.txt" "$LOG_DIR/tp2.txt" || die "TP2 over two nodes answered differently from TP1"
stop "$NODE0" node0 || die "node 0 exited with status $? on SIGTERM"
wait_exit "$NODE1" node1 || die "node 1 exited with status $? after node 0 shut the group down"
grep -q "node 0 shut the group down" "$LOG_DIR/node1.log" || die "node 1 did not log the shutdown"
echo "identical answers; both nodes stopped cleanly"

echo "== 3. Node 1 killed during a generation"
MASTER_PORT=$((MASTER_PORT + 1))
start_group
# A generation that runs for a while: up to 30,000 tokens, as far as the context allows (the demo model
# generated 4,000 in under 2 s, 2026-11-30).
MAX_LEN=$(curl -sf "http://127.0.0.1:$NODE0_PORT/v1/models" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["max_model_len"])')
LONG_TOKENS=$((MAX_LEN - 64 < 30000 ? MAX_LEN - 64 : 30000))
request "$NODE0_PORT" "${PROMPTS[0]}" "$LONG_TOKENS" >"$LOG_DIR/long.txt" &
LONG=$!
sleep 2
kill -9 "$NODE1"
wait "$LONG" || true
cat "$LOG_DIR/long.txt"
grep -q '^200' "$LOG_DIR/long.txt" && die "the $LONG_TOKENS-token generation ended before node 1 was killed"
grep -q '^500.*multi-host tensor parallelism stopped' "$LOG_DIR/long.txt" ||
  die "the request in flight did not fail with the group's error"
request "$NODE0_PORT" "${PROMPTS[1]}" 16 | tee "$LOG_DIR/after.txt"
grep -q '^500.*restart every node' "$LOG_DIR/after.txt" || die "a later request did not fail with the group's error"
curl -sf "http://127.0.0.1:$NODE0_PORT/health" >/dev/null || die "node 0 stopped answering /health"
stop "$NODE0" node0 || die "node 0 exited with status $? on SIGTERM after the failure"
echo "PASS (logs in $LOG_DIR)"
