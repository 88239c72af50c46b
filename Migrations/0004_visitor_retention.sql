-- Version 4: bounded storage. Visitors not seen for the retention period (30 days by default)
-- are deleted with their decisions, least recently seen first, in small batches; a budget of
-- rows, when set, evicts in the same order.
--
-- Seen means looked up or written: a returning visitor whose document did not change is not
-- rewritten (updated_at stays), so its lookups are recorded here, batched and at most about
-- once an hour per visitor. NULL: not looked up since this version; updated_at says when it was
-- last seen. A nullable column without a default is added without rewriting any row.
ALTER TABLE visitors ADD COLUMN last_seen_at INTEGER;    -- unix ms of the last lookup or write; NULL: updated_at

-- The prune and the budget walk this index from its oldest end, never the table.
CREATE INDEX visitors_by_last_seen ON visitors (coalesce(last_seen_at, updated_at));

DROP VIEW visitors_readable;
CREATE VIEW visitors_readable AS
SELECT visitor_id,
       anonymous_id,
       consent,
       datetime(updated_at / 1000, 'unixepoch')                AS updated_utc,
       datetime(coalesce(last_seen_at, updated_at) / 1000, 'unixepoch') AS last_seen_utc,
       json_array_length(document, '$.data.campaigns')         AS campaigns,
       json_extract(document, '$.data.context')                AS context
FROM visitors;
