-- Projects, API keys, datasets, test cases and their revisions.
-- Runs pin test_case_revisions rows, so a revision is never updated or deleted on its own.

CREATE TABLE projects (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT projects_name_key UNIQUE (name)
);

CREATE TABLE api_keys (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    project_id  uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    -- The first characters of the key, shown in listings and used to revoke it.
    prefix      text NOT NULL,
    -- SHA-256 of the whole key: keys carry 256 random bits, so a fast hash is enough.
    key_hash    bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz,
    CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash)
);
CREATE INDEX api_keys_prefix_idx ON api_keys (prefix);

CREATE TABLE datasets (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    seq           bigint GENERATED ALWAYS AS IDENTITY,
    name          text NOT NULL,
    description   text,
    data_context  jsonb,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX datasets_project_seq_idx ON datasets (project_id, seq);

-- One immutable row per version of a case's content.
CREATE TABLE test_case_revisions (
    id                        uuid PRIMARY KEY,
    test_case_id              uuid NOT NULL,
    dataset_id                uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    revision                  integer NOT NULL,
    input                     jsonb NOT NULL,
    checks_version            integer NOT NULL DEFAULT 1,
    checks                    jsonb,
    evaluation_criteria_json  jsonb,
    expected_output           text,
    evaluation_type           text NOT NULL DEFAULT 'SCORE',
    min_confidence            integer NOT NULL DEFAULT 70,
    description               text,
    created_at                timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT test_case_revisions_case_revision_key UNIQUE (test_case_id, revision),
    CONSTRAINT test_case_revisions_evaluation_type_check
        CHECK (evaluation_type IN ('BOOLEAN', 'SCORE')),
    CONSTRAINT test_case_revisions_min_confidence_check
        CHECK (min_confidence BETWEEN 0 AND 100)
);

-- The live case: where it sits in its dataset and which revision is current.
CREATE TABLE test_cases (
    id                   uuid PRIMARY KEY,
    dataset_id           uuid NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    seq                  bigint GENERATED ALWAYS AS IDENTITY,
    current_revision_id  uuid NOT NULL REFERENCES test_case_revisions (id),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX test_cases_dataset_seq_idx ON test_cases (dataset_id, seq);
