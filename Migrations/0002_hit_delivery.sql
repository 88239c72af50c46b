-- Version 2: what the tracking manager needs to deliver cached hits exactly once across restarts
-- and processes.
--
-- A sender claims rows before sending them (lease_owner, lease_until) in one write transaction,
-- so two processes sharing this file never send the same hit; a claim that outlives its lease
-- (a process killed mid-send) is taken over by the next sender.

ALTER TABLE hits ADD COLUMN next_attempt_at INTEGER;    -- unix ms: no retry before it (backoff); NULL: never failed
ALTER TABLE hits ADD COLUMN lease_owner     TEXT;       -- the SDK instance sending the row right now
ALTER TABLE hits ADD COLUMN lease_until     INTEGER;    -- unix ms: past it the claim lapses

-- Activates and hits go to two endpoints: each sender walks its own kind oldest first, in the
-- order the hits were accepted (created_at, then rowid: the index holds the rowid).
CREATE INDEX hits_by_endpoint ON hits (type = 'ACTIVATE', created_at);

-- The row count, so the cap check reads one row instead of counting the table. The store keeps
-- it with each batch it writes or deletes (row triggers would double the cost of every insert),
-- and counts the table again at each open, so a hand edit in the sqlite3 shell heals there.
CREATE TABLE hits_total (
    id    INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    total INTEGER NOT NULL
);
INSERT INTO hits_total (id, total) SELECT 1, count(*) FROM hits;

DROP VIEW hits_readable;
CREATE VIEW hits_readable AS
SELECT id,
       visitor_id,
       type,
       is_consent,
       datetime(created_at / 1000, 'unixepoch')                AS created_utc,
       (CAST(strftime('%s', 'now') AS INTEGER) * 1000 - created_at) / 1000 AS age_seconds,
       attempts,
       datetime(next_attempt_at / 1000, 'unixepoch')           AS next_attempt_utc,
       CASE WHEN lease_until > CAST(strftime('%s', 'now') AS INTEGER) * 1000
            THEN lease_owner END                               AS sending_by,
       json_extract(document, '$.data.content')                AS content
FROM hits;
