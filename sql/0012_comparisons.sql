-- Comparing a run with a baseline: the baseline is fixed when the run is created (so a gate
-- never changes under a running build), and belongs to the run's project (a composite key says
-- so). `new_failures` is counted when the run completes against its baseline: the cases that
-- passed there and do not pass now.
ALTER TABLE eval_runs ADD CONSTRAINT eval_runs_id_project_key UNIQUE (id, project_id);
ALTER TABLE eval_runs
    ADD COLUMN gate text NOT NULL DEFAULT 'threshold'
        CHECK (gate IN ('threshold', 'no_new_failures')),
    ADD COLUMN baseline_run_id uuid,
    ADD COLUMN new_failures integer CHECK (new_failures >= 0),
    ADD CONSTRAINT eval_runs_baseline_project_fkey FOREIGN KEY (baseline_run_id, project_id)
        REFERENCES eval_runs (id, project_id) ON DELETE SET NULL (baseline_run_id);

-- One comparison of a run with a baseline, computed once both have ended: its bucket counts,
-- and a row a case. Rows are listed by bucket (new failures first: rank 1), then in the order
-- the run graded the cases. Both tables are a cache of what the runs' results say (the gate's
-- count is kept on the run itself): unlogged, they cost no WAL to fill, and after a crash they
-- are empty and each comparison is computed again when asked for.
CREATE UNLOGGED TABLE run_comparisons (
    run_id uuid NOT NULL REFERENCES eval_runs (id) ON DELETE CASCADE,
    baseline_run_id uuid NOT NULL REFERENCES eval_runs (id) ON DELETE CASCADE,
    counts jsonb NOT NULL,
    new_failures integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, baseline_run_id)
);
-- A run whose results change drops the comparisons it is the baseline of, too.
CREATE INDEX run_comparisons_baseline_idx ON run_comparisons (baseline_run_id);
-- One index, the listing order: a case's seq is its first result's in the run (the baseline's,
-- for a removed case), unique within a bucket.
CREATE UNLOGGED TABLE run_comparison_cases (
    run_id uuid NOT NULL,
    baseline_run_id uuid NOT NULL,
    rank smallint NOT NULL,
    seq bigint NOT NULL,
    test_case_id uuid NOT NULL,
    revision_changed boolean NOT NULL,
    -- The trial each side shows: the first that did not pass, else the first.
    current_trial integer,
    baseline_trial integer,
    PRIMARY KEY (run_id, baseline_run_id, rank, seq),
    FOREIGN KEY (run_id, baseline_run_id)
        REFERENCES run_comparisons (run_id, baseline_run_id) ON DELETE CASCADE
);
