-- Version 10: the stored bucketing file's row with its small columns first, then the compiled form,
-- then the JSON. SQLite keeps a row's columns in order, and a value larger than a page continues
-- on a chain of overflow pages that can only be followed from its first page: with `document`
-- first, reading `downloaded_at` or the start of `compiled` meant following the whole JSON's chain
-- (a 41.6 MB file: 10,000 pages, 25 ms of a start before any of the compiled form was read). A
-- start now reads the small columns from the row's first page and the compiled form from where it
-- begins; only a read of the JSON itself (rare: the compiled form missing) follows the other chain.

CREATE TABLE bucketing_ordered (
    env_id        TEXT    NOT NULL PRIMARY KEY,
    last_modified TEXT,                                 -- the Last-Modified header of that download
    downloaded_at INTEGER NOT NULL,                     -- unix ms
    compiled      BLOB,                                 -- the file as a start reads it (the SDK's CompiledBucketingFile)
    document      TEXT    NOT NULL CHECK (json_valid(document))  -- the bucketing file as downloaded
);

INSERT INTO bucketing_ordered (env_id, last_modified, downloaded_at, compiled, document)
SELECT env_id, last_modified, downloaded_at, compiled, document FROM bucketing;

DROP TABLE bucketing;
ALTER TABLE bucketing_ordered RENAME TO bucketing;

-- As version 8 made it: a document changed by anything but the SDK leaves the compiled form NULL.
CREATE TRIGGER bucketing_compiled_follows_document AFTER UPDATE OF document ON bucketing
WHEN new.document IS NOT old.document AND new.compiled IS old.compiled
BEGIN
    UPDATE bucketing SET compiled = NULL WHERE env_id = new.env_id;
END;
