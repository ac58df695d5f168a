-- Alerts (contract section 18): a metric of a trace rule's grades or of a dataset's runs over a
-- window, evaluated by the workers; each change of state is posted once to a webhook.

CREATE TABLE alerts (
    id uuid PRIMARY KEY,
    project_id uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    rule_id uuid REFERENCES trace_rules(id) ON DELETE CASCADE,
    dataset_id uuid REFERENCES datasets(id) ON DELETE CASCADE,
    metric text NOT NULL CHECK (metric IN
        ('pass_rate', 'check_fail_rate', 'error_rate', 'p95_latency_ms', 'judge_cost_usd')),
    check_id text,
    window_s integer NOT NULL CHECK (window_s BETWEEN 60 AND 2592000),
    -- Each level is {"below": x} or {"above": x}; warn is optional.
    warn jsonb,
    alert jsonb NOT NULL,
    min_samples integer NOT NULL DEFAULT 1 CHECK (min_samples >= 1),
    webhook_url text NOT NULL,
    -- Sealed with the server's secret key, as agents' headers are; never answered.
    webhook_secret bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- NULL until first evaluated; then ok, warn, alert or no_data.
    state text CHECK (state IN ('ok', 'warn', 'alert', 'no_data')),
    state_since timestamptz,
    last_value double precision,
    last_samples integer,
    evaluated_at timestamptz,
    next_evaluation_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((rule_id IS NULL) <> (dataset_id IS NULL))
);
CREATE INDEX alerts_project_idx ON alerts (project_id, created_at DESC);
CREATE INDEX alerts_due_idx ON alerts (next_evaluation_at);

-- Each change of an alert's state, and its webhook's delivery (an outbox: the change and the
-- delivery to make are written in one transaction, and delivered by whichever worker is free).
CREATE TABLE alert_events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    alert_id uuid NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,
    at timestamptz NOT NULL DEFAULT now(),
    from_state text,
    to_state text NOT NULL,
    value double precision,
    samples integer NOT NULL,
    -- The body posted, exactly as signed.
    payload bytea NOT NULL,
    delivery text NOT NULL CHECK (delivery IN ('pending', 'delivered', 'failed', 'not_sent')),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error text,
    delivered_at timestamptz
);
CREATE INDEX alert_events_alert_idx ON alert_events (alert_id, id DESC);
CREATE INDEX alert_events_due_idx ON alert_events (next_attempt_at) WHERE delivery = 'pending';
