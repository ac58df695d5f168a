-- A trace's summary is cut to a bounded size (each text, the messages and tool calls kept);
-- what was cut is said in words, so a reader knows what is not all there.
ALTER TABLE traces ADD COLUMN cuts text[] NOT NULL DEFAULT '{}';

-- A request's size once decompressed: a worker's pass takes batches up to a budget of these
-- bytes, so that what it holds at once is bounded, not eight of the largest requests.
ALTER TABLE trace_batches ADD COLUMN plain_bytes bigint NOT NULL DEFAULT 0;
