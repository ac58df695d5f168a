-- A project may bring its own Anthropic key (sealed like agent headers, bound to the project)
-- and judge model; its runs are judged with them, else with the server's.
ALTER TABLE projects
    ADD COLUMN judge_key_encrypted  bytea,
    ADD COLUMN judge_model          text;
