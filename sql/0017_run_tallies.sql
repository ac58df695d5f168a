-- A run's counters without a hot row (issue 31). Every chunk of a run used to end on the run's
-- one row (UPDATE eval_runs SET done = done + ...), and every result locked that row FOR KEY
-- SHARE through its foreign key: workers queued on it, and PostgreSQL built a multixact for it
-- thousands of times a second.
--
-- Now each store appends what it counts for to run_tallies, a row no other writer touches;
-- readers add a run's tallies to its row in the same statement (one snapshot: whole commits
-- only), and they are folded into the row at moments one writer holds it (a run settling, the
-- reaper's round). No foreign key points at eval_runs from these rows, nor from case_results.
CREATE TABLE run_tallies (
    run_id uuid NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    done integer NOT NULL DEFAULT 0,
    graded integer NOT NULL DEFAULT 0,
    passed integer NOT NULL DEFAULT 0,
    errored integer NOT NULL DEFAULT 0,
    no_checks integer NOT NULL DEFAULT 0,
    judge_pending integer NOT NULL DEFAULT 0,
    judge_calls integer NOT NULL DEFAULT 0,
    judge_cached integer NOT NULL DEFAULT 0,
    judge_input_tokens bigint NOT NULL DEFAULT 0,
    judge_output_tokens bigint NOT NULL DEFAULT 0,
    judge_cache_read_tokens bigint NOT NULL DEFAULT 0,
    judge_cache_write_tokens bigint NOT NULL DEFAULT 0,
    judge_cost_usd double precision NOT NULL DEFAULT 0,
    judge_stopped text,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, seq)
);

-- Results keep their integrity another way: a worker stores a chunk's results only while it
-- holds the chunk's row (which references the run), a CI batch only under the run's row lock,
-- and deleting a run (with its dataset or project) deletes its results and tallies here. The
-- trigger runs after the cascade to run_chunks, which waits for any store holding a chunk.
ALTER TABLE case_results DROP CONSTRAINT case_results_run_id_fkey;

CREATE FUNCTION delete_rows_of_deleted_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM case_results c USING deleted_runs d WHERE c.run_id = d.id;
    DELETE FROM run_tallies t USING deleted_runs d WHERE t.run_id = d.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER eval_runs_delete_rows AFTER DELETE ON eval_runs
REFERENCING OLD TABLE AS deleted_runs
FOR EACH STATEMENT EXECUTE FUNCTION delete_rows_of_deleted_runs();

-- Judge chunks were numbered from a counter on the run's row (judge_chunks, no longer used):
-- now from one sequence, past every number given so far.
CREATE SEQUENCE judge_chunk_numbers AS integer;
SELECT setval('judge_chunk_numbers', greatest(1, (SELECT max(judge_chunks) FROM eval_runs)));

-- A lane's next chunk is the run's first pending one: found at once, not after walking every
-- chunk done before it (which made each claim of a long run cost more than the one before).
CREATE INDEX run_chunks_pending_idx ON run_chunks (run_id, chunk_no) WHERE state = 'pending';
