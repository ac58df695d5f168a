-- Traces of one conversation (contract section 13, "From traces"): spans sharing
-- gen_ai.conversation.id (or session.id) make one conversation, read back in time order.
ALTER TABLE traces ADD COLUMN conversation_id text;
CREATE INDEX traces_conversation_idx ON traces (project_id, conversation_id, started_at, trace_id)
    WHERE conversation_id IS NOT NULL;
