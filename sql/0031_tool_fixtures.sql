-- Tool fixtures (contract section 14): per tool, the answers an agent under test may give its
-- tool calls instead of calling a tool with side effects. Part of what a revision sends the
-- agent, so a change makes a new revision; never graded.
ALTER TABLE test_case_revisions ADD COLUMN tool_fixtures jsonb;
