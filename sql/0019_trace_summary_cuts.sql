-- A trace's summary is cut to a bounded size (each text, the messages and tool calls kept);
-- what was cut is said in words, so a reader knows what is not all there.
ALTER TABLE traces ADD COLUMN cuts text[] NOT NULL DEFAULT '{}';
