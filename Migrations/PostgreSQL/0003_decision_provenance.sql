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

CREATE TABLE flagship.decisions (
    env_id             text   NOT NULL,
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    visitor_id         text   NOT NULL,
    decided_at         bigint NOT NULL,                  -- unix ms
    campaign_id        text,                             -- NULL: not known (a row carried from before)
    variation_group_id text   NOT NULL,
    variation_id       text   NOT NULL,
    source             text   NOT NULL CHECK (source IN ('bucketing_file', 'bootstrap', 'decision_api', 'unknown')),
    reason             text   NOT NULL,                  -- SPLIT, TARGETING_MATCH, STATIC; UNKNOWN
    file_version       text,                             -- NULL: none or unknown
    context            text,                             -- the context sent, JSON text
    flags              text                              -- the variation's flags then, JSON text
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

INSERT INTO flagship.decisions (env_id, visitor_id, decided_at, campaign_id, variation_group_id, variation_id, source, reason)
SELECT v.env_id,
       v.visitor_id,
       v.updated_at,
       (SELECT c ->> 'campaignId'
          FROM jsonb_array_elements(
                   CASE WHEN jsonb_typeof(v.body -> 'data' -> 'campaigns') = 'array'
                        THEN v.body -> 'data' -> 'campaigns' ELSE '[]'::jsonb END) AS c
         WHERE c ->> 'variationGroupId' = h.key
         LIMIT 1),
       h.key,
       h.value,
       'unknown',
       'UNKNOWN'
FROM (SELECT env_id, visitor_id, updated_at, flagship.migration_jsonb(document) AS body FROM flagship.visitors) AS v,
     jsonb_each(CASE WHEN jsonb_typeof(v.body -> 'data' -> 'assignmentsHistory') = 'object'
                     THEN v.body -> 'data' -> 'assignmentsHistory' ELSE '{}'::jsonb END) AS e,
     LATERAL (SELECT e.key, e.value #>> '{}' AS value) AS h
WHERE jsonb_typeof(e.value) = 'string'
ORDER BY v.env_id, v.visitor_id, h.key;

DROP FUNCTION flagship.migration_jsonb(text);

ALTER TABLE flagship.hits ADD COLUMN file_version text;    -- an activate's decision: the file version
ALTER TABLE flagship.hits ADD COLUMN decided_at   bigint;  -- and its time, unix ms

CREATE VIEW flagship.decisions_readable AS
SELECT env_id,
       visitor_id,
       to_timestamp(decided_at / 1000.0)                           AS decided_utc,
       campaign_id,
       variation_group_id,
       variation_id,
       source,
       reason,
       left(file_version, 12)                                      AS file_version,
       (SELECT string_agg(k, ',' ORDER BY k) FROM jsonb_object_keys(flags::jsonb) AS k) AS flags,
       context::jsonb                                              AS context
FROM flagship.decisions;
