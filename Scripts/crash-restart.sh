#!/usr/bin/env bash
# Times a start of the SDK after a crash on a store of N visitors (issue 48), as
# `flagship fetch --offline` sees it: open, check, migrate, one visitor looked up and printed.
#
#   Scripts/crash-restart.sh TOOL STORE [VISITORS] [RUNS]
#
# TOOL: a `flagship` binary (a release build). STORE: the store file, made with VISITORS
# visitors (default 1,000,000) when it does not exist: one SDK-shaped document and one decision
# each, written with SQL, indexes intact. Each run first leaves what a killed process leaves (the
# session row of a process that is gone) and drops the file from the page cache where it can.
# Prints each run's seconds, then the median.
set -euo pipefail
tool=$1 store=$2 visitors=${3:-1000000} runs=${4:-3}

if [ ! -e "$store" ]; then
    "$tool" db migrate --db "$store" >/dev/null
    sqlite3 "$store" <<SQL
PRAGMA journal_mode = WAL;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $visitors),
     ids(i, id) AS (SELECT i, 'visitor-' || lower(hex(randomblob(8))) FROM n)
INSERT INTO visitors (visitor_id, anonymous_id, consent, document, updated_at, last_seen_at)
SELECT id, NULL, 1,
       json_object('version', 1, 'data', json_object(
           'visitorId', id, 'anonymousId', NULL, 'consent', json('true'),
           'context', json_object('plan', 'pro', 'isVip', json('true'), 'sdk_deviceType', 'server'),
           'campaigns', json_array(json_object('campaignId', 'c1xyzabc', 'variationGroupId', 'vg1abcdef',
               'variationId', 'v1abcdef', 'isReference', json('false'), 'type', 'ab', 'activated', json('true'),
               'flags', json_object('btnColor', 'blue', 'freeShipping', json('true')))),
           'assignmentsHistory', json_object('vg1abcdef', 'v1abcdef'))),
       1732170000000 + i, NULL
FROM ids;
INSERT INTO decisions (visitor_id, decided_at, source, file_version, context, assignments)
SELECT visitor_id, updated_at, 'bucketing_file', printf('%064d', 0), '{"plan":"pro"}',
       '[{"campaignId":"c1xyzabc","variationGroupId":"vg1abcdef","variationId":"v1abcdef","reason":"SPLIT","flags":{}}]'
FROM visitors;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
fi
visitor=$(sqlite3 "$store" "SELECT visitor_id FROM visitors LIMIT 1")
dead=$(sh -c 'echo $$')   # a process that has ended: its pid names no live process
times=()
for _ in $(seq "$runs"); do
    sqlite3 "$store" "INSERT OR REPLACE INTO sdk_state (key, value, updated_at) VALUES ('store.session.$dead.crash', '0', 0)"
    sync; [ -w /proc/sys/vm/drop_caches ] && echo 1 > /proc/sys/vm/drop_caches || true
    start=$(date +%s.%N)
    "$tool" fetch --env-id scale --api-key scale --visitor-id "$visitor" --db "$store" --offline >/dev/null 2>&1
    end=$(date +%s.%N)
    seconds=$(echo "$end - $start" | bc)
    times+=("$seconds")
    echo "run: $seconds s"
done
printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "median: %.2f s (%d runs, %s visitors)\n", a[int((NR + 1) / 2)], NR, "'"$visitors"'" }'
