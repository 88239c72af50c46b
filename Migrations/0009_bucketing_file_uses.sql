-- Version 9: when a kept bucketing file version was last used, apart from its document. Each start
-- marks the version it decides on as used; as a column of `bucketing_files` that rewrote the row,
-- and SQLite reads and builds a whole row to change one column: for a file of 40 MB, 80 MB of
-- memory and a read of the whole document at every start. The time moves to a row of its own.

CREATE TABLE bucketing_file_uses (
    version      TEXT    NOT NULL PRIMARY KEY REFERENCES bucketing_files (version) ON DELETE CASCADE,
    last_used_at INTEGER NOT NULL                      -- unix ms
);

INSERT INTO bucketing_file_uses (version, last_used_at) SELECT version, last_used_at FROM bucketing_files;

DROP INDEX bucketing_files_by_use;
ALTER TABLE bucketing_files DROP COLUMN last_used_at;
