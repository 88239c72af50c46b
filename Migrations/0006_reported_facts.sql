-- Version 6: what the platform was told. A visitor's document keeps, under "reported", the
-- consent the platform last received, a digest of the context of the last SEGMENT hit, and each
-- variation exposed with the time of its last activate, so that a returning visitor whose state
-- did not change sends nothing again (FSDeduplication):
--   "reported": {"consent": true, "context": "<sha256, 32 hex digits>",
--                "exposures": {"<variationGroupId>": ["<variationId>", <unix ms of the last activate>]}}
-- A full document carries it as written; a compact row (version 5) carries it beside its parts,
-- and `visitor_documents` now puts it back in the document. No row is rewritten: a row written
-- before has no "reported", and its visitor's next request records it.

DROP VIEW visitor_documents;
CREATE VIEW visitor_documents AS
SELECT v.rowid AS row_id,
       v.visitor_id,
       v.anonymous_id,
       v.consent,
       CASE WHEN substr(v.document, 1, 11) <> '{"compact":' THEN v.document ELSE json_patch(json_object(
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
           'version', 1),
           -- Absent: a null in a patch removes nothing that is there, and adds nothing.
           json_object('data', json_object('reported', json(json_extract(v.document, '$.reported'))))) END AS document,
       v.updated_at,
       v.last_seen_at
FROM visitors AS v;
