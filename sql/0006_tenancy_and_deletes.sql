-- A run's dataset and agent belong to the run's project: composite keys say so, so no bug in a
-- query can ever tie a run to another project's dataset or agent.
ALTER TABLE datasets ADD CONSTRAINT datasets_id_project_key UNIQUE (id, project_id);
ALTER TABLE agents ADD CONSTRAINT agents_id_project_key UNIQUE (id, project_id);
ALTER TABLE eval_runs
    DROP CONSTRAINT eval_runs_dataset_id_fkey,
    ADD CONSTRAINT eval_runs_dataset_project_fkey FOREIGN KEY (dataset_id, project_id)
        REFERENCES datasets (id, project_id) ON DELETE CASCADE,
    DROP CONSTRAINT eval_runs_agent_id_fkey,
    -- Deleting an agent leaves its runs (and their project) in place, the agent unnamed.
    ADD CONSTRAINT eval_runs_agent_project_fkey FOREIGN KEY (agent_id, project_id)
        REFERENCES agents (id, project_id) ON DELETE SET NULL (agent_id);

-- Deleting a dataset hides it and its live cases; the revisions its runs pinned, and the runs
-- themselves, stay readable. (A delete is refused while one of its runs is going on.)
ALTER TABLE datasets ADD COLUMN deleted_at timestamptz;

-- Judge verdicts are cached per project: a cached answer must never tell one project what
-- another asked. Entries of the global cache cannot be attributed, so they go.
DELETE FROM judge_cache;
ALTER TABLE judge_cache
    ADD COLUMN project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE;
