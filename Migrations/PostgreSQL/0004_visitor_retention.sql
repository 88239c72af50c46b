-- Visitor retention, as in the store file's version 4: visitors not seen for the retention period
-- are deleted with their decisions, least recently seen first, by one instance of the fleet at a
-- time (an advisory lock per environment). Seen means looked up or written: a lookup records
-- itself when the row's time is more than an hour old, in the statement that reads it.
-- NULL: not looked up since this version; updated_at says when it was last seen. A column
-- without a default is added without rewriting the table.
-- last_seen_at: unix ms of the last lookup or write.
ALTER TABLE flagship.visitors ADD COLUMN last_seen_at bigint;

-- The prune walks an environment's least recently seen visitors through this index.
CREATE INDEX visitors_by_last_seen ON flagship.visitors (env_id, (COALESCE(last_seen_at, updated_at)));

CREATE OR REPLACE VIEW flagship.visitors_readable AS
SELECT env_id,
       visitor_id,
       anonymous_id,
       consent,
       to_timestamp(updated_at / 1000.0)                          AS updated_utc,
       jsonb_array_length(COALESCE(document::jsonb -> 'data' -> 'campaigns', '[]'::jsonb)) AS campaigns,
       document::jsonb -> 'data' -> 'context'                     AS context,
       to_timestamp(COALESCE(last_seen_at, updated_at) / 1000.0)  AS last_seen_utc
FROM flagship.visitors;
