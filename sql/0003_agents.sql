-- Agents under test: where the platform calls them, and how.

CREATE TABLE agents (
    id                 uuid PRIMARY KEY,
    project_id         uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    seq                bigint GENERATED ALWAYS AS IDENTITY,
    name               text NOT NULL,
    url                text NOT NULL,
    -- The headers' JSON object, sealed by app/secrets_box.py with the agent id as associated
    -- data (so the id is chosen before the insert); NULL when the agent has no headers.
    headers_encrypted  bytea,
    -- Names only, for display: the values never leave headers_encrypted.
    header_names       text[] NOT NULL DEFAULT '{}',
    timeout_s          double precision NOT NULL DEFAULT 30,
    max_concurrency    integer,
    system_prompt      text,
    tools              jsonb,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT agents_timeout_s_check CHECK (timeout_s BETWEEN 1 AND 300),
    CONSTRAINT agents_max_concurrency_check CHECK (max_concurrency BETWEEN 1 AND 10000)
);
CREATE INDEX agents_project_seq_idx ON agents (project_id, seq);
