-- Worker processes, for operators (contract section 12: GET /api/v1/workers). Each worker
-- writes its row when it starts and with every heartbeat, and deletes it when it stops; a row
-- whose heartbeat is old is a worker that died, swept by the reaper. What a worker holds is
-- read from run_chunks, where it is already kept exactly.
CREATE TABLE workers (
    id text PRIMARY KEY,
    host text NOT NULL,
    pid integer NOT NULL,
    concurrency integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    last_heartbeat_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workers_heartbeat_idx ON workers (last_heartbeat_at);

-- Which worker holds which running chunks, for a project's view of the workers.
CREATE INDEX run_chunks_worker_idx ON run_chunks (worker_id) WHERE state = 'running';
