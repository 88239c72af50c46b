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

-- The assignment history as it was decided: one row per fetch that placed the visitor in new
-- variations, with when, by what (the file version), on which context, and the assignments it
-- made (the visitor cache document keeps the same history as a map, without when and why). One
-- row per fetch rather than per assignment: the context is written once, and a group commit adds
-- one row per deciding visitor. `decisions_readable` shows one line per assignment. Consent
-- withdrawal deletes the visitor's rows with its document.
CREATE TABLE decisions (
    id           INTEGER PRIMARY KEY,
    visitor_id   TEXT    NOT NULL,
    decided_at   INTEGER NOT NULL,                      -- unix ms
    source       TEXT    NOT NULL CHECK (source IN ('bucketing_file', 'bootstrap', 'decision_api', 'unknown')),
    file_version TEXT,                                  -- the bucketing file that decided; NULL: none or unknown
    context      TEXT    CHECK (context IS NULL OR json_valid(context)),  -- the context sent, sdk_* keys included
    -- [{"campaignId", "variationGroupId", "variationId", "reason" (SPLIT, TARGETING_MATCH, STATIC;
    --   UNKNOWN), "flags" (the variation's then)}]; campaignId null in rows carried from version 2
    assignments  TEXT    NOT NULL CHECK (json_valid(assignments) AND json_type(assignments) = 'array')
);
CREATE INDEX decisions_by_visitor ON decisions (visitor_id, decided_at);

-- Today's assignment histories, carried forward: version, context and reason unknown.
INSERT INTO decisions (visitor_id, decided_at, source, assignments)
SELECT v.visitor_id,
       v.updated_at,
       'unknown',
       json_group_array(json_object(
           'campaignId', (SELECT json_extract(c.value, '$.campaignId')
                            FROM json_each(v.document, '$.data.campaigns') AS c
                           WHERE json_extract(c.value, '$.variationGroupId') = h.key
                           LIMIT 1),
           'variationGroupId', h.key,
           'variationId', h.value,
           'reason', 'UNKNOWN'))
FROM visitors AS v, json_each(v.document, '$.data.assignmentsHistory') AS h
WHERE h.type = 'text'
GROUP BY v.visitor_id
ORDER BY v.visitor_id;

-- An activate waiting to be sent: the file version of the decision it reports, and its time.
ALTER TABLE hits ADD COLUMN file_version TEXT;          -- NULL: a hit, or not known
ALTER TABLE hits ADD COLUMN decided_at   INTEGER;       -- unix ms

CREATE VIEW decisions_readable AS
SELECT d.visitor_id,
       datetime(d.decided_at / 1000, 'unixepoch')           AS decided_utc,
       json_extract(a.value, '$.campaignId')                AS campaign_id,
       json_extract(a.value, '$.variationGroupId')          AS variation_group_id,
       json_extract(a.value, '$.variationId')               AS variation_id,
       d.source,
       json_extract(a.value, '$.reason')                    AS reason,
       substr(d.file_version, 1, 12)                        AS file_version,
       (SELECT group_concat(f.key, ',') FROM json_each(a.value, '$.flags') AS f) AS flags,
       d.context
FROM decisions AS d, json_each(d.assignments) AS a;
