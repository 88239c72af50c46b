#!/usr/bin/env bash
# Usage: Scripts/example.sh
#        FLAGSHIP_EXAMPLE_BIN=path/to/HummingbirdServer Scripts/example.sh
#
# Builds Examples/HummingbirdServer as its own package (or takes the program already built at
# FLAGSHIP_EXAMPLE_BIN) and runs it the way it is deployed: configured from the
# environment, against `flagship serve` (the local Flagship-compatible server). Checks that
# GET /flags/{visitorId} answers the visitor's flags as JSON, that GET /metrics answers the
# Prometheus text format with the SDK's metrics, and that SIGTERM drains it and closes the SDK
# (exit 0, its `flags_served` hit delivered to the server), and that GET /health/ready answers
# the SDK's health. Exits non-zero naming what failed.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
swift="${SWIFT:-swift}"
example="$root/Examples/HummingbirdServer"
work="$(mktemp -d)"
server_pid=""
app_pid=""
cleanup() {
    [ -n "$app_pid" ] && kill "$app_pid" 2>/dev/null || true
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "example: FAILED: $*"; echo "--- example's log:"; cat "$work/app.log" 2>/dev/null || true; exit 1; }

if [ -n "${FLAGSHIP_EXAMPLE_BIN:-}" ]; then
    # `make test`: the same main.swift, built in the main package's build with every trait
    # (FLAGSHIP_EXAMPLE=1, Package.swift), where SwiftNIO is already compiled.
    app="$FLAGSHIP_EXAMPLE_BIN"
    [ -x "$app" ] || fail "no example program at $app (make build builds it)"
    echo "Examples/HummingbirdServer, as built by make build: $app"
else
    # The example enables three of the package's traits: a fixed hash seed for SwiftPM keeps their
    # order, so that a build planned again recompiles nothing (see BUILD_ALL in the Makefile).
    build=(env SWIFT_DETERMINISTIC_HASHING=1 "$swift" build --package-path "$example")
    echo "Building Examples/HummingbirdServer..."
    start=$(date +%s)
    "${build[@]}" 2>&1 | grep -E "error|warning: " | grep -v "unhandled" || true
    "${build[@]}" >/dev/null 2>&1 || fail "the example does not build (swift build --package-path $example)"
    echo "Built in $(( $(date +%s) - start )) s."
    app="$("${build[@]}" --show-bin-path)/HummingbirdServer"
fi
flagship="$("$swift" build --package-path "$root" --show-bin-path)/flagship"
[ -x "$flagship" ] || "$swift" build --package-path "$root" --product flagship >/dev/null

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
server_port="$(free_port)"
app_port="$(free_port)"

"$flagship" serve --env-id example_env --api-key example_key --port "$server_port" --record "$work/received.jsonl" \
    > "$work/server.log" 2>&1 &
server_pid=$!

PORT="$app_port" FLAGSHIP_ENV_ID=example_env FLAGSHIP_API_KEY=example_key \
    FLAGSHIP_DECISION_URL="http://127.0.0.1:$server_port/v2" FLAGSHIP_EVENTS_URL="http://127.0.0.1:$server_port" \
    FLAGSHIP_DB="$work/flagship.sqlite" "$app" > "$work/app.log" 2>&1 &
app_pid=$!

# Ready when it answers (30 s at most).
for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$app_port/metrics" > /dev/null 2>&1 && break
    kill -0 "$app_pid" 2>/dev/null || fail "the example exited at start"
    sleep 0.1
done

flags="$(curl -sf "http://127.0.0.1:$app_port/flags/alice?plan=pro&isVip=true")" || fail "GET /flags/alice did not answer 200"
echo "GET /flags/alice?plan=pro&isVip=true -> $flags"
python3 - "$flags" <<'PY' || fail "GET /flags/alice did not answer the visitor's flags"
import json, sys
answer = json.loads(sys.argv[1])
assert answer["visitorId"] == "alice", answer
assert answer["fetchStatus"] == "FETCHED", answer
assert isinstance(answer["flags"], dict) and answer["flags"], answer
# For Flagship's JavaScript SDK on the page: one entry per flag, its value as hex of {"v": value}.
entries = answer["initialFlagsData"]
assert sorted(e["key"] for e in entries) == sorted(answer["flags"]), answer
for e in entries:
    assert json.loads(bytes.fromhex(e["hex"]).decode("ascii")) == {"v": answer["flags"][e["key"]]}, e
PY

ready="$(curl -sf "http://127.0.0.1:$app_port/health/ready")" || fail "GET /health/ready did not answer 200"
echo "GET /health/ready -> $ready"
python3 - "$ready" <<'PY' || fail "GET /health/ready did not say ready"
import json, sys
answer = json.loads(sys.argv[1])
assert answer["status"] in ("ready", "delivery_failing"), answer
assert answer["backlogLimit"] == 50000, answer
PY

metrics="$(curl -sf "http://127.0.0.1:$app_port/metrics")" || fail "GET /metrics did not answer 200"
echo "$metrics" | grep -q '^flagship_fetches_total{.*outcome="success".*} 1' || fail "GET /metrics has no successful fetch: $(echo "$metrics" | grep flagship_fetches || true)"
echo "$metrics" | grep -q '^flagship_hits_total{' || fail "GET /metrics has no flagship_hits_total"
echo "GET /metrics -> $(echo "$metrics" | grep -c '^flagship_') flagship_ sample lines"

kill -TERM "$app_pid"
stopped=$(date +%s)
status=0
wait "$app_pid" || status=$?
app_pid=""
[ "$status" -eq 0 ] || fail "exit status $status after SIGTERM (0 expected)"
took=$(( $(date +%s) - stopped ))
[ "$took" -le 8 ] || fail "took $took s to stop after SIGTERM"
grep -q '"flags_served"' "$work/received.jsonl" || fail "the flags_served hit did not reach the server before the example exited"
echo "SIGTERM -> exit 0 in $took s, the flags_served hit delivered"
echo "example: ok"
