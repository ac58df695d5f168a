-- The AI judge: judge work rides on run_chunks (kind 'judge', its cases listed in items), so it
-- is found again after a crash exactly like agent work; verdicts are cached in PostgreSQL.

ALTER TABLE run_chunks
    ADD COLUMN kind   text NOT NULL DEFAULT 'agent',
    -- For judge chunks: [[test_case_id, trial], ...] whose verdicts are awaited.
    ADD COLUMN items  jsonb,
    ADD CONSTRAINT run_chunks_kind_check CHECK (kind IN ('agent', 'judge'));

ALTER TABLE case_results
    -- True while the case's AI judge checks wait for verdicts; its grade is provisional then.
    ADD COLUMN judge_pending  boolean NOT NULL DEFAULT false,
    -- Per verdict: check id, model, reasoning, score, usage, latency, cached, samples, flaky.
    ADD COLUMN judge_records  jsonb;

ALTER TABLE eval_runs
    -- Cases whose verdicts are awaited: the run is `grading`, and does not pass, until 0.
    ADD COLUMN judge_pending             integer NOT NULL DEFAULT 0,
    ADD COLUMN judge_chunks              integer NOT NULL DEFAULT 0,
    ADD COLUMN judge_use_cache           boolean NOT NULL DEFAULT true,
    -- Set when the judge's key was refused (401/403): the run judges no more, saying why.
    ADD COLUMN judge_stopped             text,
    ADD COLUMN judge_calls               integer NOT NULL DEFAULT 0,
    ADD COLUMN judge_cached              integer NOT NULL DEFAULT 0,
    ADD COLUMN judge_input_tokens        bigint NOT NULL DEFAULT 0,
    ADD COLUMN judge_output_tokens       bigint NOT NULL DEFAULT 0,
    ADD COLUMN judge_cache_read_tokens   bigint NOT NULL DEFAULT 0,
    ADD COLUMN judge_cache_write_tokens  bigint NOT NULL DEFAULT 0,
    ADD COLUMN judge_cost_usd            double precision NOT NULL DEFAULT 0;

CREATE TABLE judge_cache (
    -- SHA-256 over model, prompt version, schema, criterion or expectation, reply and context.
    key         text PRIMARY KEY,
    model       text NOT NULL,
    answer      jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
