-- Server mode: a run calls a registered agent through chunks of work tracked here.
-- PostgreSQL is the source of truth; arq jobs only carry chunk ids, so a lost job or a dead
-- worker is found again from these rows.

ALTER TABLE eval_runs
    ADD COLUMN agent_id     uuid REFERENCES agents (id) ON DELETE SET NULL,
    ADD COLUMN concurrency  integer,
    ADD COLUMN case_count   integer NOT NULL DEFAULT 0,
    ADD COLUMN chunk_size   integer,
    ADD COLUMN started_at   timestamptz;

CREATE TABLE run_chunks (
    run_id        uuid NOT NULL REFERENCES eval_runs (id) ON DELETE CASCADE,
    chunk_no      integer NOT NULL,
    -- pending: not yet handed to the queue; queued: a job carries it; running: a worker holds
    -- it (heartbeat_at says it is alive); done.
    state         text NOT NULL DEFAULT 'pending',
    -- The job allowed to run this chunk: a stale duplicate job finds another id and stops.
    job_id        text,
    attempt       integer NOT NULL DEFAULT 0,
    worker_id     text,
    enqueued_at   timestamptz,
    heartbeat_at  timestamptz,
    finished_at   timestamptz,
    PRIMARY KEY (run_id, chunk_no),
    CONSTRAINT run_chunks_state_check CHECK (state IN ('pending', 'queued', 'running', 'done'))
);
-- The reaper's scan: chunks that are queued or running, across all runs.
CREATE INDEX run_chunks_active_idx ON run_chunks (state, heartbeat_at)
    WHERE state IN ('queued', 'running');
