-- The web app: sessions, one-time sign-in links, keys' last use, the project's default agent,
-- and the indexes the dataset page searches and filters with.

-- A browser's session: the cookie holds a random token, only its hash is stored. A session
-- opened with a key ends when that key is revoked.
CREATE TABLE web_sessions (
    token_hash    bytea PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    api_key_id    uuid REFERENCES api_keys(id) ON DELETE CASCADE,
    csrf_token    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL
);
CREATE INDEX web_sessions_expires_idx ON web_sessions (expires_at);

-- `agentlasso dev` prints a link that signs in once, within minutes.
CREATE TABLE login_tokens (
    token_hash  bytea PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);

ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;

-- The agent Preview and Send test message call. Deleting it leaves the project without one.
ALTER TABLE projects ADD COLUMN default_agent_id uuid REFERENCES agents(id) ON DELETE SET NULL;

-- Searching a dataset's cases by input and description, and filtering them by their checks.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX test_case_revisions_search_idx ON test_case_revisions
    USING gin (((input #>> '{}') || ' ' || coalesce(description, '')) gin_trgm_ops);
CREATE INDEX test_case_revisions_checks_idx ON test_case_revisions
    USING gin (checks jsonb_path_ops);
-- With the checks index, lets "uses the AI judge" (a judge check or an expected output) be
-- answered from indexes when few cases match.
CREATE INDEX test_case_revisions_expectation_idx ON test_case_revisions (id)
    WHERE expected_output IS NOT NULL;
