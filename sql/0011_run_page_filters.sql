-- The runs list filtered by status or by gate, newest first, reads only the runs it shows.
CREATE INDEX eval_runs_project_status_seq_idx ON eval_runs (project_id, status, seq DESC);
CREATE INDEX eval_runs_project_gate_seq_idx ON eval_runs (project_id, ci_pass, seq DESC);
-- A run's partially graded results (few, as a rule) without reading the rest of its outcome.
CREATE INDEX case_results_partially_graded_idx ON case_results (run_id, outcome, seq)
    WHERE partially_graded;
