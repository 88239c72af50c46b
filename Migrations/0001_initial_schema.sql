-- The Flagship local store, version 1.
-- Times are unix milliseconds (INTEGER); the *_readable views show them as text.
-- JSON columns hold JSON text, checked with json_valid, so json_extract works in the sqlite3 shell.

CREATE TABLE visitors (
    visitor_id   TEXT    NOT NULL PRIMARY KEY,
    anonymous_id TEXT,                                  -- set while the visitor is authenticated
    consent      INTEGER NOT NULL CHECK (consent IN (0, 1)),
    document     TEXT    NOT NULL CHECK (json_valid(document)),  -- the visitor cache document, version 1
    updated_at   INTEGER NOT NULL                       -- unix ms of the last write
);

CREATE TABLE hits (
    id          TEXT    NOT NULL PRIMARY KEY,           -- '<visitorId>:<uuid>'
    visitor_id  TEXT    NOT NULL,
    type        TEXT    NOT NULL CHECK (type IN ('SCREENVIEW', 'PAGEVIEW', 'TRANSACTION', 'ITEM',
                                                 'EVENT', 'SEGMENT', 'ACTIVATE')),
    is_consent  INTEGER NOT NULL DEFAULT 0 CHECK (is_consent IN (0, 1)),  -- kept when consent is withdrawn
    document    TEXT    NOT NULL CHECK (json_valid(document)),  -- the hit cache document, version 1
    created_at  INTEGER NOT NULL,                       -- unix ms when the hit was created
    attempts    INTEGER NOT NULL DEFAULT 0              -- failed sends so far
);

-- Oldest-first paging, expiry and eviction walk this index.
CREATE INDEX hits_by_age ON hits (created_at, id);
-- Consent withdrawal deletes one visitor's hits.
CREATE INDEX hits_by_visitor ON hits (visitor_id);

CREATE TABLE bucketing (
    env_id        TEXT    NOT NULL PRIMARY KEY,
    document      TEXT    NOT NULL CHECK (json_valid(document)),  -- the bucketing file as downloaded
    last_modified TEXT,                                 -- the Last-Modified header of that download
    downloaded_at INTEGER NOT NULL                      -- unix ms
);

-- SDK state that other platforms keep in preferences (first-init flag, generated ids).
CREATE TABLE sdk_state (
    key        TEXT    NOT NULL PRIMARY KEY,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL                         -- unix ms
);

CREATE VIEW visitors_readable AS
SELECT visitor_id,
       anonymous_id,
       consent,
       datetime(updated_at / 1000, 'unixepoch')                AS updated_utc,
       json_array_length(document, '$.data.campaigns')         AS campaigns,
       json_extract(document, '$.data.context')                AS context
FROM visitors;

CREATE VIEW hits_readable AS
SELECT id,
       visitor_id,
       type,
       is_consent,
       datetime(created_at / 1000, 'unixepoch')                AS created_utc,
       (CAST(strftime('%s', 'now') AS INTEGER) * 1000 - created_at) / 1000 AS age_seconds,
       attempts,
       json_extract(document, '$.data.content')                AS content
FROM hits;
