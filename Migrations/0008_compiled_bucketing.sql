-- Version 8: the bucketing file is kept compiled beside its JSON, so that a start decides at once
-- whatever the file's size: `compiled` holds what a decision reads in a binary layout, each
-- variation's flags read only when a visitor is first assigned to it (the SDK's
-- CompiledBucketingFile). NULL until the SDK writes it: with each download, or at the first start
-- that finds it missing, which reads the JSON and writes it.
--
-- A `document` changed by anything but the SDK (a hand edit in the sqlite3 shell) makes `compiled`
-- NULL, so the JSON is what the next start reads: the trigger fires when the document changes and
-- the compiled form is not written in the same statement.

ALTER TABLE bucketing ADD COLUMN compiled BLOB;

CREATE TRIGGER bucketing_compiled_follows_document AFTER UPDATE OF document ON bucketing
WHEN new.document IS NOT old.document AND new.compiled IS old.compiled
BEGIN
    UPDATE bucketing SET compiled = NULL WHERE env_id = new.env_id;
END;
