-- Runs, the case revisions each one pinned, and one result per (case, trial).

CREATE TABLE eval_runs (
    id               uuid PRIMARY KEY,
    project_id       uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    dataset_id       uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    seq              bigint GENERATED ALWAYS AS IDENTITY,
    mode             text NOT NULL,
    status           text NOT NULL,
    pass_threshold   double precision NOT NULL,
    trials           integer NOT NULL DEFAULT 1,
    labels           jsonb,
    idempotency_key  text,
    -- SHA-256 of the canonical request: the same key with another body is a conflict.
    request_hash     bytea,
    -- Counters, kept true by every write of case results (deltas under the run's row lock).
    total            integer NOT NULL,
    done             integer NOT NULL DEFAULT 0,
    graded           integer NOT NULL DEFAULT 0,
    passed           integer NOT NULL DEFAULT 0,
    errored          integer NOT NULL DEFAULT 0,
    no_checks        integer NOT NULL DEFAULT 0,
    pass_rate        double precision,
    ci_pass          boolean NOT NULL DEFAULT false,
    ci_fail_reason   text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    CONSTRAINT eval_runs_mode_check CHECK (mode IN ('ci', 'server')),
    CONSTRAINT eval_runs_status_check CHECK (status IN (
        'queued', 'running', 'awaiting_results', 'grading', 'completed', 'cancelled', 'failed')),
    CONSTRAINT eval_runs_pass_threshold_check CHECK (pass_threshold BETWEEN 0 AND 1),
    CONSTRAINT eval_runs_counts_check CHECK (
        passed <= graded AND graded + no_checks <= done AND done <= total AND errored <= done)
);
CREATE UNIQUE INDEX eval_runs_idempotency_key_idx
    ON eval_runs (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX eval_runs_project_seq_idx ON eval_runs (project_id, seq DESC);
CREATE INDEX eval_runs_dataset_seq_idx ON eval_runs (dataset_id, seq DESC);

-- The revision of every case a run grades, fixed when the run is created.
CREATE TABLE eval_run_cases (
    run_id        uuid NOT NULL REFERENCES eval_runs (id) ON DELETE CASCADE,
    position      integer NOT NULL,
    test_case_id  uuid NOT NULL,
    revision_id   uuid NOT NULL REFERENCES test_case_revisions (id),
    PRIMARY KEY (run_id, test_case_id)
);
CREATE INDEX eval_run_cases_position_idx ON eval_run_cases (run_id, position);

CREATE TABLE case_results (
    run_id             uuid NOT NULL REFERENCES eval_runs (id) ON DELETE CASCADE,
    test_case_id       uuid NOT NULL,
    trial              integer NOT NULL DEFAULT 1,
    seq                bigint GENERATED ALWAYS AS IDENTITY,
    revision_id        uuid NOT NULL REFERENCES test_case_revisions (id),
    outcome            text NOT NULL,
    graded             boolean NOT NULL,
    pass_fail          boolean NOT NULL,
    no_checks          boolean NOT NULL,
    errored            boolean NOT NULL DEFAULT false,
    score              double precision,
    partially_graded   boolean NOT NULL,
    judge_reasoning    text NOT NULL,
    check_results      jsonb NOT NULL,
    ungraded_items     jsonb NOT NULL,
    -- What the agent did, as reported: absent and null are kept apart by the flags.
    output_reported    boolean NOT NULL,
    actual_output      jsonb,
    tool_calls_reported boolean NOT NULL,
    actual_tool_calls  jsonb,
    -- The platform's call to the agent (server mode); null in CI mode.
    agent_latency_ms   integer,
    agent_attempts     jsonb,
    agent_error        text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, test_case_id, trial),
    CONSTRAINT case_results_outcome_check CHECK (outcome IN ('passed', 'failed', 'not_graded'))
);
CREATE INDEX case_results_run_seq_idx ON case_results (run_id, seq);
CREATE INDEX case_results_run_outcome_seq_idx ON case_results (run_id, outcome, seq);
