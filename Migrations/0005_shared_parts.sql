-- Version 5: what many visitors share is stored once. A new visitor cost about 6 KB: its
-- document repeated, for every campaign, the variation as the bucketing file or the Decision
-- API describes it (names, flags, type...), and the context keys the SDK sets itself (sdk_*,
-- fs_*), which are the same for every visitor of a process; its decision row repeated both.
--
-- `shared_variations` holds a campaign's variation as a visitor document lists it (without
-- `activated`, which is the visitor's own), once per distinct text; `shared_contexts` holds the
-- sdk_*/fs_* part of a context, once per distinct text. A row written by this version refers to
-- them by id:
--   visitors.document   {"compact": 1, "context": {the other keys}, "preset": <shared_contexts.id>,
--                        "campaigns": [[<shared_variations.id>, <activated>], ...],
--                        "assignmentsHistory": {...}}
--   decisions.assignments  [[<shared_variations.id>, "<reason>"], ...]
--   decisions.context      the other keys, with decisions.context_preset = <shared_contexts.id>
-- Rows written before (and rows a custom write put there) keep the full documents; both are
-- read. `visitor_documents` and `decision_rows` give every row in the full shape, whichever it
-- was written in: `SELECT document FROM visitor_documents WHERE visitor_id = 'v1'`. (A compact
-- row is told by its first characters, as this SDK writes it: `{"compact":` and `[[`.)
--
-- Bound: a shared row nobody refers to is deleted by the retention task once the table holds
-- more than twice the rows in use at the last collection (and more than 1,000).
CREATE TABLE shared_variations (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,             -- never reused: a stale id finds nothing
    entry TEXT    NOT NULL UNIQUE CHECK (json_valid(entry) AND json_type(entry) = 'object')
);

CREATE TABLE shared_contexts (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    context TEXT    NOT NULL UNIQUE CHECK (json_valid(context) AND json_type(context) = 'object')
);

ALTER TABLE decisions ADD COLUMN context_preset INTEGER;  -- shared_contexts.id; NULL: decisions.context is whole

-- Every visitor row as the visitor cache document, version 1 (what a custom cache receives).
CREATE VIEW visitor_documents AS
SELECT v.rowid AS row_id,
       v.visitor_id,
       v.anonymous_id,
       v.consent,
       CASE WHEN substr(v.document, 1, 11) <> '{"compact":' THEN v.document ELSE json_object(
           'data', json_object(
               'anonymousId', v.anonymous_id,
               'assignmentsHistory', json(coalesce(json_extract(v.document, '$.assignmentsHistory'), '{}')),
               'campaigns', json((SELECT coalesce(json_group_array(json(e.entry)), '[]') FROM (
                   SELECT json_insert(s.entry, '$.activated', json(CASE WHEN json_extract(c.value, '$[1]') THEN 'true' ELSE 'false' END)) AS entry
                   FROM json_each(v.document, '$.campaigns') AS c
                   JOIN shared_variations AS s ON s.id = json_extract(c.value, '$[0]')
                   ORDER BY c.key) AS e)),
               'consent', json(CASE v.consent WHEN 1 THEN 'true' ELSE 'false' END),
               'context', json(coalesce(json_patch(
                   (SELECT p.context FROM shared_contexts AS p WHERE p.id = json_extract(v.document, '$.preset')),
                   json_extract(v.document, '$.context')), json_extract(v.document, '$.context'), '{}')),
               'visitorId', v.visitor_id),
           'version', 1) END AS document,
       v.updated_at,
       v.last_seen_at
FROM visitors AS v;

-- Every decision row with its assignments and context whole.
CREATE VIEW decision_rows AS
SELECT d.id,
       d.visitor_id,
       d.decided_at,
       d.source,
       d.file_version,
       CASE WHEN d.context_preset IS NULL THEN d.context ELSE coalesce(json_patch(
           (SELECT p.context FROM shared_contexts AS p WHERE p.id = d.context_preset), d.context), d.context) END AS context,
       CASE WHEN substr(d.assignments, 1, 2) = '[[' THEN (SELECT coalesce(json_group_array(json(a.assignment)), '[]') FROM (
           SELECT json_object('campaignId', json_extract(s.entry, '$.campaignId'),
                              'variationGroupId', json_extract(s.entry, '$.variationGroupId'),
                              'variationId', json_extract(s.entry, '$.variationId'),
                              'reason', json_extract(x.value, '$[1]'),
                              'flags', json(coalesce(json_extract(s.entry, '$.flags'), '{}'))) AS assignment
           FROM json_each(d.assignments) AS x
           JOIN shared_variations AS s ON s.id = json_extract(x.value, '$[0]')
           ORDER BY x.key) AS a) ELSE d.assignments END AS assignments
FROM decisions AS d;

DROP VIEW visitors_readable;
CREATE VIEW visitors_readable AS
SELECT visitor_id,
       anonymous_id,
       consent,
       datetime(updated_at / 1000, 'unixepoch')                AS updated_utc,
       datetime(coalesce(last_seen_at, updated_at) / 1000, 'unixepoch') AS last_seen_utc,
       json_array_length(document, '$.data.campaigns')         AS campaigns,
       json_extract(document, '$.data.context')                AS context
FROM visitor_documents;

DROP VIEW decisions_readable;
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
FROM decision_rows AS d, json_each(d.assignments) AS a;
