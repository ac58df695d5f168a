-- Traces of real conversations (OTLP), read into one shape, to turn into test cases.

-- How long a project's traces are kept after they arrive.
ALTER TABLE projects
    ADD COLUMN trace_retention_days integer NOT NULL DEFAULT 30
        CHECK (trace_retention_days BETWEEN 1 AND 3650);

-- Requests accepted but not yet read: the API stores the body as it came (gzip included) and a
-- worker decodes it, so ingestion never waits on reading spans. A batch that failed to store
-- this many times is dropped with a log line rather than retried forever.
CREATE TABLE trace_batches (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    received_at timestamptz NOT NULL DEFAULT now(),
    encoding text NOT NULL CHECK (encoding IN ('protobuf', 'json')),
    gzipped boolean NOT NULL,
    body bytea NOT NULL,
    span_count integer NOT NULL,
    failed_attempts integer NOT NULL DEFAULT 0
);
CREATE INDEX trace_batches_project_idx ON trace_batches (project_id, id);

-- One row per trace, summed up from its spans each time more of them arrive.
CREATE TABLE traces (
    project_id uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    trace_id text NOT NULL CHECK (trace_id ~ '^[0-9a-f]{32}$'),
    received_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    name text NOT NULL DEFAULT '',
    input jsonb,
    output text,
    -- The input's and the reply's text, cut to a few thousand characters: what search reads.
    search_text text NOT NULL DEFAULT '',
    messages jsonb NOT NULL DEFAULT '[]',
    tool_calls jsonb NOT NULL DEFAULT '[]',
    tool_names text[] NOT NULL DEFAULT '{}',
    model text,
    usage jsonb,
    error text,
    started_at timestamptz NOT NULL DEFAULT now(),
    duration_ms bigint NOT NULL DEFAULT 0,
    span_count integer NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, trace_id)
);
CREATE INDEX traces_started_idx ON traces (project_id, started_at DESC, trace_id DESC);
CREATE INDEX traces_search_idx ON traces USING gin (search_text gin_trgm_ops);
CREATE INDEX traces_tools_idx ON traces USING gin (tool_names);
CREATE INDEX traces_errors_idx ON traces (project_id, started_at DESC, trace_id DESC)
    WHERE error IS NOT NULL;
CREATE INDEX traces_received_idx ON traces (project_id, received_at);

-- Every span as it came, unknown attributes included; a span id is stored once.
CREATE TABLE trace_spans (
    project_id uuid NOT NULL,
    trace_id text NOT NULL,
    span_id text NOT NULL,
    parent_span_id text,
    name text NOT NULL,
    kind smallint NOT NULL,
    start_ns bigint NOT NULL,
    end_ns bigint NOT NULL,
    status_code smallint NOT NULL,
    status_message text NOT NULL,
    attributes jsonb NOT NULL,
    events jsonb NOT NULL,
    resource jsonb NOT NULL,
    scope text NOT NULL,
    PRIMARY KEY (project_id, trace_id, span_id),
    FOREIGN KEY (project_id, trace_id) REFERENCES traces (project_id, trace_id) ON DELETE CASCADE
);

-- A test case made from a trace remembers it (the trace may later expire; the id stays).
ALTER TABLE test_cases ADD COLUMN source_trace_id text;
CREATE INDEX test_cases_source_trace_idx ON test_cases (source_trace_id)
    WHERE source_trace_id IS NOT NULL;
