-- The Flagship store on PostgreSQL: the same tables as the SQLite file, for a fleet of instances.
-- Everything lives in the schema "flagship", which the migrator creates and marks as ours; it
-- never touches another schema. One database may serve several environments: rows carry env_id.
-- Times are unix milliseconds (bigint) and documents JSON text as written, as in SQLite: both
-- stores hold the same bytes (the views parse them for reading).

CREATE TABLE flagship.visitors (
    env_id       text    NOT NULL,
    visitor_id   text    NOT NULL,
    anonymous_id text,                                   -- set while the visitor is authenticated
    consent      boolean NOT NULL,
    document     text    NOT NULL,                       -- the visitor cache document, version 1, as written
    updated_at   bigint  NOT NULL,                       -- unix ms of the last write
    PRIMARY KEY (env_id, visitor_id)
);

CREATE TABLE flagship.hits (
    env_id          text    NOT NULL,
    id              text    NOT NULL,                    -- '<visitorId>:<uuid>'
    visitor_id      text    NOT NULL,
    type            text    NOT NULL CHECK (type IN ('SCREENVIEW', 'PAGEVIEW', 'TRANSACTION', 'ITEM',
                                                     'EVENT', 'SEGMENT', 'ACTIVATE')),
    is_consent      boolean NOT NULL DEFAULT false,      -- kept when consent is withdrawn
    document        text    NOT NULL,                    -- the hit cache document, version 1, as written
    created_at      bigint  NOT NULL,                    -- unix ms when the hit was created
    attempts        integer NOT NULL DEFAULT 0,          -- failed sends so far
    next_attempt_at bigint,                              -- unix ms: no retry before it; NULL: never failed
    lease_owner     text,                                -- the instance sending the row right now
    lease_until     bigint,                              -- unix ms: past it the claim lapses
    PRIMARY KEY (env_id, id)
);

-- What a sender claims first: the oldest hits of an endpoint (activates apart from the rest).
CREATE INDEX hits_by_endpoint ON flagship.hits (env_id, (type = 'ACTIVATE'), created_at);
CREATE INDEX hits_by_visitor ON flagship.hits (env_id, visitor_id);

CREATE TABLE flagship.bucketing (
    env_id        text   NOT NULL PRIMARY KEY,
    document      text   NOT NULL,                       -- the bucketing file, byte for byte as downloaded
    last_modified text,                                  -- the Last-Modified header of that download
    downloaded_at bigint NOT NULL                        -- unix ms
);

CREATE TABLE flagship.sdk_state (
    env_id     text   NOT NULL,
    key        text   NOT NULL,
    value      text   NOT NULL,
    updated_at bigint NOT NULL,                          -- unix ms
    PRIMARY KEY (env_id, key)
);

CREATE VIEW flagship.hits_readable AS
SELECT env_id,
       id,
       visitor_id,
       type,
       is_consent,
       to_timestamp(created_at / 1000.0)                          AS created_utc,
       (extract(epoch FROM now()) * 1000 - created_at)::bigint / 1000 AS age_seconds,
       attempts,
       to_timestamp(next_attempt_at / 1000.0)                     AS next_attempt_utc,
       CASE WHEN lease_until > extract(epoch FROM now()) * 1000 THEN lease_owner END AS sending_by,
       document::jsonb -> 'data' -> 'content'                     AS content
FROM flagship.hits;

CREATE VIEW flagship.visitors_readable AS
SELECT env_id,
       visitor_id,
       anonymous_id,
       consent,
       to_timestamp(updated_at / 1000.0)                          AS updated_utc,
       jsonb_array_length(COALESCE(document::jsonb -> 'data' -> 'campaigns', '[]'::jsonb)) AS campaigns,
       document::jsonb -> 'data' -> 'context'                     AS context
FROM flagship.visitors;
