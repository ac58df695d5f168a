-- Per-project quotas read cheaply: a dataset's live case count, kept by every write of cases,
-- and the runs of a project still going on, found by a partial index.
ALTER TABLE datasets ADD COLUMN case_count integer NOT NULL DEFAULT 0;
UPDATE datasets d SET case_count = (SELECT count(*) FROM test_cases c WHERE c.dataset_id = d.id);

CREATE INDEX eval_runs_project_active_idx ON eval_runs (project_id)
    WHERE status NOT IN ('completed', 'cancelled', 'failed');
