-- A claim takes an endpoint's oldest rows in (created_at, id) order, a page at a time. The first
-- index stopped at created_at, so a claim could not stop after its page: the planner sorted every
-- waiting row (14 ms for 20,000) or walked the index and sorted ties. With id in the index, the
-- claim reads its page in index order and stops.
CREATE INDEX hits_by_claim_order ON flagship.hits (env_id, (type = 'ACTIVATE'), created_at, id);
DROP INDEX flagship.hits_by_endpoint;

-- A queue table: rows are deleted about as fast as they come. Vacuum and analyze it after a
-- thousand changes rather than after a fifth of the table, so that claims do not walk the index
-- entries of delivered rows, and the planner knows how many rows wait. Pages are filled to 70 %:
-- a claim rewrites its rows (the lease), and with room on the page the new version stays there
-- without new index entries (a HOT update: the lease columns are in no index).
ALTER TABLE flagship.hits SET (
    fillfactor = 70,
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_analyze_scale_factor = 0,
    autovacuum_analyze_threshold = 1000
);
