-- Conversations (contract section 13): a case is single-turn (input) or a conversation (its
-- scripted turns and simulated user), never both.
ALTER TABLE test_case_revisions ALTER COLUMN input DROP NOT NULL;
ALTER TABLE test_case_revisions ADD COLUMN conversation jsonb;
ALTER TABLE test_case_revisions ADD CONSTRAINT test_case_revisions_one_kind_check
    CHECK ((input IS NULL) <> (conversation IS NULL));

-- A conversation's result: its turns as they ran, how it ended, which attempt of the whole
-- conversation this is (a worker that died mid-conversation runs it again from turn 1), and
-- what the simulated user's model calls cost. All null for a single-turn case.
ALTER TABLE case_results ADD COLUMN turns jsonb;
ALTER TABLE case_results ADD COLUMN ended_by text
    CHECK (ended_by IN ('script', 'agent', 'simulated_user', 'max_turns', 'error'));
ALTER TABLE case_results ADD COLUMN conversation_attempt integer;
ALTER TABLE case_results ADD COLUMN simulated_usage jsonb;

-- The studio's search reads a conversation's user messages where a case has no input.
DROP INDEX test_case_revisions_search_idx;
CREATE INDEX test_case_revisions_search_idx ON test_case_revisions
    USING gin (((coalesce(input, jsonb_path_query_array(conversation, '$.turns[*].user'))
                 #>> '{}') || ' ' || coalesce(description, '')) gin_trgm_ops);
