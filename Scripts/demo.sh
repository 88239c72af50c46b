#!/usr/bin/env bash
# The walkthrough behind `make demo`: the SDK against the local Flagship server, store first, in
# a temporary directory, then the local store through `flagship` and the sqlite3 shell.
set -euo pipefail
flagship="$1"
workdir="$(mktemp -d -t flagship-demo-XXXXXX)"
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$workdir"
}
trap cleanup EXIT
# One env id for every step: it names the store file, and the seeded hits carry it (cid).
env_id="demo_env"
db="$workdir/flagship-$env_id.sqlite"
credentials=(--env-id "$env_id" --api-key demo_key)

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold="" plain=""; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
show() { printf '$ %s\n' "$*"; "$@"; }
# The statuses and each flag's key and value, out of the JSON that `flagship fetch` prints.
brief() { printf '$ %s | (statuses and flag values)\n' "$*"; "$@" | grep -E '^  "(fetch|sdk|error)|^    "[^"]+" : \{|"value" : [^{[]'; }

step "1. A local Flagship server on 127.0.0.1 (no account needed)"
"$flagship" serve "${credentials[@]}" --record "$workdir/requests.jsonl" > "$workdir/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do grep -q -- "--decision-url" "$workdir/serve.log" 2>/dev/null && break; sleep 0.1; done
cat "$workdir/serve.log"
decision_url="$(sed -n 's/.*--decision-url \([^ ]*\).*/\1/p' "$workdir/serve.log")"
events_url="$(sed -n 's/.*--events-url \([^ ]*\).*/\1/p' "$workdir/serve.log")"
urls=(--decision-url "$decision_url" --events-url "$events_url")

step "2. Fetch alice's flags: the Decision API answers, the visitor is cached in SQLite"
show "$flagship" fetch "${credentials[@]}" --visitor-id alice --context '{"plan": "pro", "age": 34}' --db "$db" "${urls[@]}"

step "3. The server goes away"
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
echo "what it received:"; sed -n '4,$p' "$workdir/serve.log"

step "4. Store first: offline, alice's flags come from the cache (FETCHED_FROM_CACHE)"
echo "(the consent hit sent at creation cannot go out: the warnings say so)"
brief "$flagship" fetch "${credentials[@]}" --visitor-id alice --db "$db" "${urls[@]}" --offline

step "5. A fetch with the server down fails on time and keeps the cached flags (FETCH_ERROR)"
brief "$flagship" fetch "${credentials[@]}" --visitor-id alice --db "$db" "${urls[@]}" --timeout 500

step "6. Unsent hits, written through FSDefaultCacheHit (and more visitors through FSDefaultCacheVisitor)"
show "$flagship" demo seed --cache-dir "$workdir" --env-id "$env_id"

step "7. What the store holds"
show "$flagship" db inspect --db "$db"
show "$flagship" visitors --db "$db"
show "$flagship" hits --db "$db" --limit 5

step "8. The same, with the sqlite3 shell: paste these to explore your own cache"
printf 'DB=%s\n' "$db"
query() { printf '$ sqlite3 -header -column %s "%s"\n' "\$DB" "$1"; sqlite3 -header -column "$db" "$1"; echo; }
query "SELECT version, name, datetime(applied_at/1000,'unixepoch') AS applied_utc, checksum FROM schema_migrations;"
query "SELECT visitor_id, consent, datetime(updated_at/1000,'unixepoch') AS updated_utc FROM visitors;"
query "SELECT json_extract(c.value,'\$.campaignId') AS campaign, json_extract(c.value,'\$.flags') AS flags FROM visitors, json_each(document,'\$.data.campaigns') AS c WHERE visitor_id = 'alice';"
query "SELECT type, count(*) AS hits FROM hits GROUP BY type ORDER BY type;"
query "SELECT id, json_extract(document,'\$.data.content.ea') AS action, attempts FROM hits WHERE type = 'EVENT' ORDER BY created_at LIMIT 3;"
query "SELECT visitor_id, type, created_utc, age_seconds FROM hits_readable ORDER BY created_utc LIMIT 3;"

step "9. Hits while the server is down: each is committed to SQLite before sendHit returns"
# A store of its own, so that what is replayed is exactly what was sent here.
db="$workdir/flagship-offline.sqlite"
echo "(the SDK's warnings say each send failed and when it will try again)"
show "$flagship" send-hit "${credentials[@]}" --db "$db" "${urls[@]}" --visitor-id bob --event add_to_cart --label cta --value 2 --count 3
show "$flagship" hits --db "$db"
printf 'DB=%s\n' "$db"
query "SELECT type, json_extract(content,'\$.ea') AS action, attempts, next_attempt_utc, sending_by FROM hits_readable ORDER BY created_utc;"

step "10. The app restarts, still offline: its hits join those of the first run"
show "$flagship" send-hit "${credentials[@]}" --db "$db" "${urls[@]}" --visitor-id bob --screen checkout
query "SELECT type, count(*) AS hits, max(attempts) AS most_attempts FROM hits GROUP BY type;"

step "11. The server comes back on the same port: flagship replay sends everything, oldest first"
port="${events_url##*:}"
"$flagship" serve "${credentials[@]}" --port "$port" --record "$workdir/requests-after.jsonl" > "$workdir/serve-after.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do grep -q -- "--decision-url" "$workdir/serve-after.log" 2>/dev/null && break; sleep 0.1; done
show "$flagship" replay "${credentials[@]}" --db "$db" "${urls[@]}"
echo "what the server received, hits by type:"
grep -o '"t":"[A-Z]*"' "$workdir/requests-after.jsonl" | cut -d'"' -f4 | grep -vx BATCH | sort | uniq -c
echo "and the store is empty:"
show "$flagship" hits --db "$db"
query "SELECT count(*) AS unsent FROM hits;"

step "12. Bucketing mode: the server serves a bucketing file (the built-in sample: three campaigns)"
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
"$flagship" serve "${credentials[@]}" --sample-bucketing --record "$workdir/requests-bucketing.jsonl" > "$workdir/serve-bucketing.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do grep -q -- "--bucketing-url" "$workdir/serve-bucketing.log" 2>/dev/null && break; sleep 0.1; done
head -n 3 "$workdir/serve-bucketing.log"
bucketing_url="$(sed -n 's/.*--bucketing-url \([^ ]*\).*/\1/p' "$workdir/serve-bucketing.log")"
decision_url="$(sed -n 's/.*--decision-url \([^ ]*\).*/\1/p' "$workdir/serve-bucketing.log")"
events_url="$(sed -n 's/.*--events-url \([^ ]*\).*/\1/p' "$workdir/serve-bucketing.log")"
urls=(--decision-url "$decision_url" --events-url "$events_url")
db="$workdir/flagship-bucketing.sqlite"
echo "(the SDK downloads the file into SQLite and decides here: no Decision API request per visitor)"
brief "$flagship" fetch "${credentials[@]}" --db "$db" --mode bucketing --bucketing-url "$bucketing_url" "${urls[@]}" --visitor-id alice --context '{"isVip": true, "plan": "pro"}'
printf 'DB=%s\n' "$db"
query "SELECT env_id, last_modified, json_array_length(document, '\$.campaigns') AS campaigns, json_extract(document, '\$.panic') AS panic FROM bucketing;"

step "12b. The same visitor, three requests (three processes): the platform hears each thing once"
echo "(each fetch reports every flag's exposure, as a page that shows them all: --expose)"
received_by_type() {
    # The hits the server recorded, by type, the consent hit apart (an EVENT named fs_consent).
    python3 - "$workdir/requests-bucketing.jsonl" <<'PY'
import collections, json, sys
counts = collections.Counter()
for line in open(sys.argv[1]):
    request = json.loads(line)
    body = request.get("body")
    try:
        body = json.loads(body) if isinstance(body, str) else body
    except ValueError:
        continue
    if not isinstance(body, dict):
        continue
    for hit in body.get("h", []):
        counts["consent" if hit.get("ea") == "fs_consent" else hit.get("t", "?")] += 1
    counts["ACTIVATE"] += len(body.get("batch", []))
print("  " + (", ".join(f"{kind} {count}" for kind, count in sorted(counts.items()) if count) or "nothing"))
PY
    : > "$workdir/requests-bucketing.jsonl"
}
db="$workdir/flagship-requests.sqlite"
: > "$workdir/requests-bucketing.jsonl"   # what alice's fetch above sent is not counted
for request in 1 2 3; do
    "$flagship" fetch "${credentials[@]}" --db "$db" --mode bucketing --bucketing-url "$bucketing_url" "${urls[@]}" \
        --visitor-id erin --context '{"isVip": true, "plan": "pro"}' --expose > /dev/null
    echo "request $request, what the server received:"; received_by_type
done
echo "(what the store records as told, in erin's document; FSDeduplication.reference sends everything each time)"
printf 'DB=%s\n' "$db"
query "SELECT visitor_id, json_extract(document, '\$.data.reported') AS reported FROM visitor_documents;"
db="$workdir/flagship-bucketing.sqlite"

step "13. The server goes away; a new process still decides visitors offline, from the stored file"
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
echo "what the server received:"; grep -E "bucketing.json|campaigns" "$workdir/serve-bucketing.log" | sed -n '1,5p'
brief "$flagship" fetch "${credentials[@]}" --db "$db" --mode bucketing --bucketing-url "$bucketing_url" "${urls[@]}" --visitor-id carol --context '{"isVip": false, "plan": "enterprise"}'
brief "$flagship" fetch "${credentials[@]}" --db "$db" --mode bucketing --bucketing-url "$bucketing_url" "${urls[@]}" --visitor-id dave
show "$flagship" db inspect --db "$db"

step "14. flagship eval: the same engine on a file, no SDK, no network, no database"
sqlite3 "$db" "SELECT document FROM bucketing;" > "$workdir/bucketing.json"
printf 'alice\ncarol\ndave\nerin\n' > "$workdir/visitors.txt"
show "$flagship" eval --bucketing-file "$workdir/bucketing.json" --visitors-file "$workdir/visitors.txt" --context '{"plan": "pro"}'
echo "(why did carol get her variations? each condition, her bucket, the allocation ranges)"
show "$flagship" eval --bucketing-file "$workdir/bucketing.json" --visitor-id carol --context '{"isVip": false, "plan": "enterprise"}' --explain

step "15. flagship why: the decisions the store recorded (file version, time, context), replayed by today's engine"
show "$flagship" why --db "$db" --visitor-id alice --replay
query "SELECT visitor_id, decided_utc, campaign_id, variation_id, reason, file_version, flags FROM decisions_readable;"
show "$flagship" why --db "$db" --replay

step "Done. Everything was in $workdir (removed now); your own store is \${FLAGSHIP_CACHE_DIR:-~/.cache/flagship}/flagship-<envId>.sqlite"
