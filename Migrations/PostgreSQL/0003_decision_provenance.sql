-- Decision provenance, as in the store file's version 3: the bucketing file versions the fleet
-- decided on, and each assignment with the version, the time and the context that decided it.

CREATE TABLE flagship.bucketing_files (
    env_id        text   NOT NULL,
    version       text   NOT NULL,                       -- sha256 of the file's bytes, 64 hex digits
    document      text   NOT NULL,                       -- the file, byte for byte
    origin        text   NOT NULL CHECK (origin IN ('download', 'store', 'fleet', 'bootstrap')),
    first_used_at bigint NOT NULL,                       -- unix ms
    last_used_at  bigint NOT NULL,                       -- unix ms
    PRIMARY KEY (env_id, version)
);
CREATE INDEX bucketing_files_by_use ON flagship.bucketing_files (env_id, last_used_at);

-- One row per fetch that placed a visitor in new variations (its assignments as a JSON array),
-- as in the store file: the context written once.
CREATE TABLE flagship.decisions (
    env_id       text   NOT NULL,
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    visitor_id   text   NOT NULL,
    decided_at   bigint NOT NULL,                        -- unix ms
    source       text   NOT NULL CHECK (source IN ('bucketing_file', 'bootstrap', 'decision_api', 'unknown')),
    file_version text,                                   -- NULL: none or unknown
    context      text,                                   -- the context sent, JSON text
    assignments  text   NOT NULL                         -- [{"campaignId", "variationGroupId", "variationId", "reason", "flags"}]
);
CREATE INDEX decisions_by_visitor ON flagship.decisions (env_id, visitor_id, decided_at);

-- Today's assignment histories, carried forward: version, context and reason unknown. A document
-- that is not JSON (a hand edit) carries nothing rather than failing the migration.
CREATE FUNCTION flagship.migration_jsonb(document text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN document::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;

INSERT INTO flagship.decisions (env_id, visitor_id, decided_at, source, assignments)
SELECT v.env_id,
       v.visitor_id,
       v.updated_at,
       'unknown',
       jsonb_agg(jsonb_build_object(
           'campaignId', (SELECT c ->> 'campaignId'
                            FROM jsonb_array_elements(
                                     CASE WHEN jsonb_typeof(v.body -> 'data' -> 'campaigns') = 'array'
                                          THEN v.body -> 'data' -> 'campaigns' ELSE '[]'::jsonb END) AS c
                           WHERE c ->> 'variationGroupId' = e.key
                           LIMIT 1),
           'variationGroupId', e.key,
           'variationId', e.value #>> '{}',
           'reason', 'UNKNOWN') ORDER BY e.key)::text
FROM (SELECT env_id, visitor_id, updated_at, flagship.migration_jsonb(document) AS body FROM flagship.visitors) AS v,
     jsonb_each(CASE WHEN jsonb_typeof(v.body -> 'data' -> 'assignmentsHistory') = 'object'
                     THEN v.body -> 'data' -> 'assignmentsHistory' ELSE '{}'::jsonb END) AS e
WHERE jsonb_typeof(e.value) = 'string'
GROUP BY v.env_id, v.visitor_id, v.updated_at
ORDER BY v.env_id, v.visitor_id;

DROP FUNCTION flagship.migration_jsonb(text);

ALTER TABLE flagship.hits ADD COLUMN file_version text;    -- an activate's decision: the file version
ALTER TABLE flagship.hits ADD COLUMN decided_at   bigint;  -- and its time, unix ms

CREATE VIEW flagship.decisions_readable AS
SELECT d.env_id,
       d.visitor_id,
       to_timestamp(d.decided_at / 1000.0)                         AS decided_utc,
       a ->> 'campaignId'                                          AS campaign_id,
       a ->> 'variationGroupId'                                    AS variation_group_id,
       a ->> 'variationId'                                         AS variation_id,
       d.source,
       a ->> 'reason'                                              AS reason,
       left(d.file_version, 12)                                    AS file_version,
       (SELECT string_agg(k, ',' ORDER BY k)
          FROM jsonb_object_keys(CASE WHEN jsonb_typeof(a -> 'flags') = 'object' THEN a -> 'flags' ELSE '{}'::jsonb END) AS k) AS flags,
       d.context::jsonb                                            AS context
FROM flagship.decisions AS d, jsonb_array_elements(d.assignments::jsonb) AS a;
