-- Trace rules (contract section 18): the checks of a case, applied by the workers to the
-- project's production traces that match a filter, each trace graded once it is quiet.

-- Workers find traces that went quiet by when their last span arrived.
CREATE INDEX traces_updated_idx ON traces (project_id, updated_at, trace_id);

CREATE TABLE trace_rules (
    id uuid PRIMARY KEY,
    project_id uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    -- {"name"?, "tool"?, "errors_only"?, "attributes"?}: every part given must match.
    filter jsonb NOT NULL DEFAULT '{}',
    sample_rate double precision NOT NULL DEFAULT 1 CHECK (sample_rate BETWEEN 0 AND 1),
    -- What a trace is graded against, as a case's content holds it (checks, expected_output).
    content jsonb NOT NULL,
    daily_judge_budget_usd double precision CHECK (daily_judge_budget_usd >= 0),
    backfill_hours integer NOT NULL DEFAULT 0 CHECK (backfill_hours BETWEEN 0 AND 168),
    created_at timestamptz NOT NULL DEFAULT now(),
    -- How far the workers have looked: traces whose last span arrived at or before this
    -- (ordered by that time, then trace id) have been considered. A late span moves a trace
    -- past it again.
    seen_until timestamptz NOT NULL,
    seen_until_trace text NOT NULL DEFAULT ''
);
CREATE INDEX trace_rules_project_idx ON trace_rules (project_id, created_at DESC);

-- One row per rule and trace: its latest grade, for the version of the trace (its span count)
-- graded. A claimed row is `pending` until its grade is stored; one a worker held too long
-- is claimed again.
CREATE TABLE trace_evaluations (
    rule_id uuid NOT NULL REFERENCES trace_rules(id) ON DELETE CASCADE,
    project_id uuid NOT NULL,
    trace_id text NOT NULL,
    span_count integer NOT NULL,
    -- How many times the trace was graded by this rule (more than once: late spans).
    times_graded integer NOT NULL DEFAULT 0,
    status text NOT NULL CHECK (status IN ('pending', 'graded')),
    claimed_at timestamptz NOT NULL DEFAULT now(),
    graded_at timestamptz,
    passed boolean,
    graded boolean,
    -- The trace recorded an error (what an error_rate alert counts).
    trace_error boolean NOT NULL DEFAULT false,
    duration_ms bigint NOT NULL DEFAULT 0,
    judge_cost_usd double precision NOT NULL DEFAULT 0,
    -- The case result, as a run's result holds it (checks, reasoning, score).
    result jsonb,
    PRIMARY KEY (rule_id, trace_id),
    FOREIGN KEY (project_id, trace_id) REFERENCES traces (project_id, trace_id) ON DELETE CASCADE
);
CREATE INDEX trace_evaluations_trace_idx ON trace_evaluations (project_id, trace_id);
CREATE INDEX trace_evaluations_graded_idx ON trace_evaluations (rule_id, graded_at DESC)
    WHERE status = 'graded';
CREATE INDEX trace_evaluations_pending_idx ON trace_evaluations (rule_id, claimed_at)
    WHERE status = 'pending';

-- What each rule's judge checks spent, per UTC day, against its daily budget.
CREATE TABLE trace_rule_spend (
    rule_id uuid NOT NULL REFERENCES trace_rules(id) ON DELETE CASCADE,
    day date NOT NULL,
    cost_usd double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (rule_id, day)
);
