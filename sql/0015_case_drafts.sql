-- Generated cases (contract section 11). A generation records what it was asked from (the
-- agent's prompt and tools, kept so that one draft can be regenerated later) and what the model
-- cost; its drafts wait for review, and none joins the dataset until it is accepted, which
-- makes a test case through the ordinary path and records which one.
CREATE TABLE case_generations (
    id uuid PRIMARY KEY,
    project_id uuid NOT NULL,
    dataset_id uuid NOT NULL,
    -- The registered agent it was generated from, if any (kept as a plain id: an agent may be
    -- deleted, and its prompt and tools are copied below anyway).
    agent_id uuid,
    system_prompt text,
    tools jsonb NOT NULL,
    instruction text,
    requested integer NOT NULL CHECK (requested BETWEEN 1 AND 20),
    model text NOT NULL,
    prompt_version text NOT NULL,
    usage jsonb NOT NULL,
    cost_usd double precision,
    calls integer NOT NULL,
    latency_ms integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (dataset_id, project_id) REFERENCES datasets (id, project_id) ON DELETE CASCADE
);
CREATE INDEX case_generations_dataset_idx ON case_generations (dataset_id, created_at);

CREATE TABLE case_drafts (
    id uuid PRIMARY KEY,
    project_id uuid NOT NULL,
    dataset_id uuid NOT NULL,
    generation_id uuid NOT NULL REFERENCES case_generations (id) ON DELETE CASCADE,
    seq bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'rejected')),
    -- The plan's slot it fills: a kind of case, the tool it is about ('' for none), its intent.
    category text NOT NULL,
    tool text NOT NULL,
    intent text NOT NULL,
    input jsonb NOT NULL,
    description text,
    checks jsonb NOT NULL,
    expected_output text,
    evaluation_type text NOT NULL CHECK (evaluation_type IN ('BOOLEAN', 'SCORE')),
    min_confidence integer NOT NULL CHECK (min_confidence BETWEEN 0 AND 100),
    tools_expected text[] NOT NULL,
    tools_forbidden text[] NOT NULL,
    -- Accepted: the test case it became. Rejected by a regeneration: the draft that replaced it.
    test_case_id uuid REFERENCES test_cases (id) ON DELETE SET NULL,
    replaced_by uuid REFERENCES case_drafts (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    decided_at timestamptz,
    FOREIGN KEY (dataset_id, project_id) REFERENCES datasets (id, project_id) ON DELETE CASCADE
);
-- The review queue: a dataset's drafts by status, in the order they were made.
CREATE INDEX case_drafts_dataset_status_idx ON case_drafts (dataset_id, status, seq);
CREATE INDEX case_drafts_dataset_seq_idx ON case_drafts (dataset_id, seq);
CREATE INDEX case_drafts_generation_idx ON case_drafts (generation_id);
CREATE INDEX case_drafts_test_case_idx ON case_drafts (test_case_id) WHERE test_case_id IS NOT NULL;
CREATE INDEX case_drafts_replaced_by_idx ON case_drafts (replaced_by) WHERE replaced_by IS NOT NULL;
