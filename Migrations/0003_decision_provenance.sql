-- Version 3: decision provenance. Every decision can be explained and replayed later from what
-- the store keeps: the bucketing file versions the SDK decided on, and each assignment with the
-- version, the time and the context that decided it.

-- Each bucketing file the SDK used (downloaded, stored, shared by a fleet or given at start), by
-- version: the sha256 of its bytes as received. The newest few are kept (20 by default).
CREATE TABLE bucketing_files (
    version       TEXT    NOT NULL PRIMARY KEY,         -- sha256 of the file's bytes, 64 hex digits
    env_id        TEXT    NOT NULL,
    document      TEXT    NOT NULL CHECK (json_valid(document)),  -- the file, byte for byte
    origin        TEXT    NOT NULL CHECK (origin IN ('download', 'store', 'fleet', 'bootstrap')),
    first_used_at INTEGER NOT NULL,                     -- unix ms
    last_used_at  INTEGER NOT NULL                      -- unix ms
);
CREATE INDEX bucketing_files_by_use ON bucketing_files (env_id, last_used_at);

-- The assignment history, one row per assignment as it was decided: a visitor placed in a
-- variation of a variation group (the visitor cache document keeps the same history as a map,
-- without when and why). Consent withdrawal deletes the visitor's rows with its document.
CREATE TABLE decisions (
    id                 INTEGER PRIMARY KEY,
    visitor_id         TEXT    NOT NULL,
    decided_at         INTEGER NOT NULL,                -- unix ms
    campaign_id        TEXT,                            -- NULL: not known (a row carried from version 2)
    variation_group_id TEXT    NOT NULL,
    variation_id       TEXT    NOT NULL,
    source             TEXT    NOT NULL CHECK (source IN ('bucketing_file', 'bootstrap', 'decision_api', 'unknown')),
    reason             TEXT    NOT NULL,                -- the flags' reason then: SPLIT, TARGETING_MATCH, STATIC; UNKNOWN
    file_version       TEXT,                            -- the bucketing file that decided; NULL: none or unknown
    context            TEXT    CHECK (context IS NULL OR json_valid(context)),  -- the context sent, sdk_* keys included
    flags              TEXT    CHECK (flags IS NULL OR json_valid(flags))       -- the variation's flags then
);
CREATE INDEX decisions_by_visitor ON decisions (visitor_id, decided_at);

-- Today's assignment histories, carried forward: version, context and reason unknown.
INSERT INTO decisions (visitor_id, decided_at, campaign_id, variation_group_id, variation_id, source, reason)
SELECT v.visitor_id,
       v.updated_at,
       (SELECT json_extract(c.value, '$.campaignId')
          FROM json_each(v.document, '$.data.campaigns') AS c
         WHERE json_extract(c.value, '$.variationGroupId') = h.key
         LIMIT 1),
       h.key,
       h.value,
       'unknown',
       'UNKNOWN'
FROM visitors AS v, json_each(v.document, '$.data.assignmentsHistory') AS h
WHERE h.type = 'text'
ORDER BY v.visitor_id, h.key;

-- An activate waiting to be sent: the file version of the decision it reports, and its time.
ALTER TABLE hits ADD COLUMN file_version TEXT;          -- NULL: a hit, or not known
ALTER TABLE hits ADD COLUMN decided_at   INTEGER;       -- unix ms

CREATE VIEW decisions_readable AS
SELECT d.visitor_id,
       datetime(d.decided_at / 1000, 'unixepoch')          AS decided_utc,
       d.campaign_id,
       d.variation_group_id,
       d.variation_id,
       d.source,
       d.reason,
       substr(d.file_version, 1, 12)                        AS file_version,
       (SELECT group_concat(f.key, ',') FROM json_each(d.flags) AS f) AS flags,
       d.context
FROM decisions AS d;
