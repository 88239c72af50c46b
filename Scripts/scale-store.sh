#!/usr/bin/env bash
# Makes a store of VISITORS visitors for the scale measurements (issue 48), unless STORE exists:
#
#   Scripts/scale-store.sh TOOL STORE VISITORS
#
# TOOL (a `flagship` binary) migrates a new file; then one SDK-shaped document and one decision
# row per visitor are written with SQL in one transaction, indexes intact. Visitor i (from 1) was
# last written at 1732170000000 + i unix ms (2024-11-21), so the least recently seen come first
# in insertion order, and a retention boundary at 1732170000000 + k leaves k - 1 of them due.
# The file is left checkpointed, its WAL gone, marked as checked once (as a store the SDK closed
# cleanly is).
set -euo pipefail
tool=$1 store=$2 visitors=$3
[ -e "$store" ] && exit 0
"$tool" db migrate --db "$store" >/dev/null
sqlite3 "$store" >/dev/null <<SQL
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
