-- Tags and dataset versions (contract section 17).

-- A revision holds its tags, so a run and a version keep the tags the case had then. The GIN
-- index serves "cases with any of these tags" (tags && $1) for runs and the studio's filter.
ALTER TABLE test_case_revisions ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
CREATE INDEX test_case_revisions_tags_idx ON test_case_revisions USING gin (tags);

-- A version: the revision every live case of the dataset had when it was frozen, in order.
CREATE TABLE dataset_versions (
    id uuid PRIMARY KEY,
    dataset_id uuid NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    case_count integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT dataset_versions_name_key UNIQUE (dataset_id, name)
);
CREATE INDEX dataset_versions_dataset_seq_idx ON dataset_versions (dataset_id, seq DESC);

CREATE TABLE dataset_version_cases (
    version_id uuid NOT NULL REFERENCES dataset_versions(id) ON DELETE CASCADE,
    position integer NOT NULL,
    test_case_id uuid NOT NULL,
    -- No cascade from the case: deleting a case keeps the revision a version froze.
    revision_id uuid NOT NULL REFERENCES test_case_revisions(id),
    PRIMARY KEY (version_id, position)
);

-- What a run was asked to run: only cases with one of these tags (null: every case), and the
-- version it ran, by id and by name (null: the dataset's current revisions). A version is
-- never renamed, so its name is kept beside the id for every read of the run.
ALTER TABLE eval_runs ADD COLUMN tags text[];
ALTER TABLE eval_runs ADD COLUMN dataset_version_id uuid
    REFERENCES dataset_versions(id) ON DELETE SET NULL;
ALTER TABLE eval_runs ADD COLUMN dataset_version text;
