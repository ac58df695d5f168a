-- Human review (contract section 15): a queue of case results and traces for people to label,
-- and their labels. A label of a judged check keeps what it judges (the case, its revision, the
-- run and trial, the criterion) and the judge's verdict beside it, so the judge's agreement with
-- people is one aggregate over one table.

CREATE TABLE review_items (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    seq           bigint GENERATED ALWAYS AS IDENTITY,
    -- A case result of a run ...
    run_id        uuid,
    test_case_id  uuid,
    trial         integer,
    dataset_id    uuid REFERENCES datasets (id) ON DELETE CASCADE,
    -- ... or a trace.
    trace_id      text,
    assignee_id   uuid REFERENCES users (id) ON DELETE SET NULL,
    -- Set when the item's assignee (or, unassigned, anyone) first labels it.
    done_at       timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT review_items_one_kind_check CHECK (
        (run_id IS NOT NULL AND test_case_id IS NOT NULL AND trial IS NOT NULL
            AND dataset_id IS NOT NULL AND trace_id IS NULL)
        OR (run_id IS NULL AND test_case_id IS NULL AND trial IS NULL AND dataset_id IS NULL
            AND trace_id IS NOT NULL)
    )
);
CREATE UNIQUE INDEX review_items_result_key ON review_items (project_id, run_id, test_case_id, trial)
    WHERE run_id IS NOT NULL;
CREATE UNIQUE INDEX review_items_trace_key ON review_items (project_id, trace_id)
    WHERE trace_id IS NOT NULL;
CREATE INDEX review_items_project_seq_idx ON review_items (project_id, seq);

-- One person's labels of one item; a second person's are another row beside it.
CREATE TABLE review_labels (
    item_id           uuid NOT NULL REFERENCES review_items (id) ON DELETE CASCADE,
    -- Who labelled: "user:<id>", "api_key:<id>" or "sign_in_link"; and how they are shown.
    reviewer          text NOT NULL,
    reviewer_name     text NOT NULL,
    verdict           boolean,
    note              text,
    corrected_output  text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (item_id, reviewer)
);

-- One person's verdict on one judged check (an llm_judge check or the expectation) of a result.
CREATE TABLE review_check_labels (
    item_id        uuid NOT NULL,
    reviewer       text NOT NULL,
    check_id       text NOT NULL,
    project_id     uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    dataset_id     uuid NOT NULL,
    test_case_id   uuid NOT NULL,
    revision_id    uuid NOT NULL,
    run_id         uuid NOT NULL,
    trial          integer NOT NULL,
    kind           text NOT NULL,
    -- The llm_judge check's criterion; NULL for the expectation.
    criterion      text,
    human_passed   boolean NOT NULL,
    -- The judge's verdict on the labelled result; NULL when it gave none (not graded).
    judge_passed   boolean,
    -- Repeated judging of the same reply: how many samples were taken, and how many passed.
    judge_samples         integer NOT NULL DEFAULT 0,
    judge_samples_passed  integer NOT NULL DEFAULT 0,
    note           text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (item_id, reviewer, check_id),
    FOREIGN KEY (item_id, reviewer) REFERENCES review_labels (item_id, reviewer) ON DELETE CASCADE,
    CONSTRAINT review_check_labels_kind_check CHECK (kind IN ('llm_judge', 'expectation'))
);

-- People's votes on one judged check of one result, kept as labels are saved (under the item's
-- row lock): the judge's agreement with people is then one aggregate over a row per result,
-- however many people labelled it.
CREATE TABLE review_votes (
    item_id         uuid NOT NULL REFERENCES review_items (id) ON DELETE CASCADE,
    check_id        text NOT NULL,
    project_id      uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    dataset_id      uuid NOT NULL,
    -- A deleted case's votes go with it (its labels stay readable on their items).
    test_case_id    uuid NOT NULL REFERENCES test_cases (id) ON DELETE CASCADE,
    revision_id     uuid NOT NULL,
    -- Whether the labelled revision is the case's current one (kept so by the trigger below).
    current         boolean NOT NULL,
    run_id          uuid NOT NULL,
    trial           integer NOT NULL,
    kind            text NOT NULL,
    criterion       text,
    judge_passed    boolean,
    -- How many people passed it, of how many labelled it.
    yes             integer NOT NULL,
    votes           integer NOT NULL,
    samples         integer NOT NULL,
    samples_passed  integer NOT NULL,
    labelled_at     timestamptz NOT NULL,
    notes           text,
    PRIMARY KEY (item_id, check_id)
);
CREATE INDEX review_votes_dataset_idx ON review_votes (dataset_id);
CREATE INDEX review_votes_case_idx ON review_votes (test_case_id);
-- A criterion's newest disagreements on current revisions (the judge against people's
-- majority), read first.
CREATE INDEX review_votes_disagreements_idx
    ON review_votes (dataset_id, kind, coalesce(criterion, ''), labelled_at DESC)
    WHERE current AND judge_passed IS NOT NULL AND 2 * yes <> votes
        AND (2 * yes > votes) <> judge_passed;

-- An edited case's votes stop counting as current (and a restored revision's start again):
-- whatever writes the new revision, the votes follow it.
CREATE FUNCTION review_votes_follow_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE review_votes SET current = (revision_id = NEW.current_revision_id)
    WHERE test_case_id = NEW.id AND current <> (revision_id = NEW.current_revision_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER review_votes_follow_revision
    AFTER UPDATE OF current_revision_id ON test_cases
    FOR EACH ROW WHEN (OLD.current_revision_id IS DISTINCT FROM NEW.current_revision_id)
    EXECUTE FUNCTION review_votes_follow_revision();

-- The gate's doubts about its judge (contract section 15): each llm_judge criterion a completed
-- run graded whose agreement with people is too low or too little known, in words. Decided
-- once, when the run completes; NULL before.
ALTER TABLE eval_runs ADD COLUMN judge_warnings jsonb;

-- A project may make the failures of an AI-judge criterion people disagree with (kappa under
-- 0.6 over 20 labels or more) count as not graded: an explicit setting, off by default. A run
-- takes the doubted criteria (with why, in words) when it starts.
ALTER TABLE projects ADD COLUMN doubted_judge_not_graded boolean NOT NULL DEFAULT false;
ALTER TABLE eval_runs ADD COLUMN doubted_criteria jsonb;
