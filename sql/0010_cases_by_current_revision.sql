-- A search that matches few revisions finds their cases through this index, instead of
-- reading every case of the table to join them.
CREATE INDEX test_cases_current_revision_idx ON test_cases (current_revision_id);
