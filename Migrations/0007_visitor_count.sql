-- Version 7: the visitors are counted as they come and go, so that `flagship db inspect` (and
-- whatever else wants the number) reads one row instead of counting an index of millions. Two
-- triggers keep `visitors_total` up to date whoever writes the table: a visitor saved again
-- (`INSERT ... ON CONFLICT DO UPDATE`) is an update and fires neither. A write that bypasses
-- them (`INSERT OR REPLACE`, which deletes without firing delete triggers) would leave the count
-- off by its rows; `flagship db inspect --full` counts the table itself beside it.

CREATE TABLE visitors_total (
    id    INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    total INTEGER NOT NULL
);
INSERT INTO visitors_total (id, total) SELECT 1, count(*) FROM visitors;

CREATE TRIGGER visitors_counted_in AFTER INSERT ON visitors
BEGIN
    UPDATE visitors_total SET total = total + 1 WHERE id = 1;
END;

CREATE TRIGGER visitors_counted_out AFTER DELETE ON visitors
BEGIN
    UPDATE visitors_total SET total = total - 1 WHERE id = 1;
END;
