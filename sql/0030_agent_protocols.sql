-- How the platform talks to agents (contract section 14): the protocol an agent speaks, the
-- model an OpenAI-compatible endpoint is asked for, an A2A agent's card as registration
-- fetched it, and the W3C trace ids of the calls behind each case result.

ALTER TABLE agents
    ADD COLUMN protocol text NOT NULL DEFAULT 'agentlasso'
        CONSTRAINT agents_protocol_check CHECK (protocol IN ('agentlasso', 'openai_chat', 'a2a')),
    ADD COLUMN model text,
    -- The card's name, description, JSON-RPC endpoint and skills (an a2a agent only).
    ADD COLUMN a2a_card jsonb;

-- Every trace id a result's calls carried (one, or one per turn) as a JSON array: the trace
-- page finds the case results behind a trace through it.
ALTER TABLE case_results ADD COLUMN agent_trace_ids jsonb;
CREATE INDEX case_results_agent_trace_ids_idx ON case_results
    USING gin (agent_trace_ids jsonb_path_ops) WHERE agent_trace_ids IS NOT NULL;
