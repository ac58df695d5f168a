-- Why a conversation could not be played out (the simulated user's model unavailable), kept
-- with its result: its card and its re-grade say so, instead of reading its ending as the
-- simulated user's choice. Null for every other result.
ALTER TABLE case_results ADD COLUMN not_played_reason text;
