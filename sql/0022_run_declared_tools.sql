-- The input schemas of the tools the run's agent declares, by name, taken when the run starts:
-- a server-mode run's agent's, or the `tools` a CI-mode run was started with. tool_args_valid
-- validates calls against them, the same for every case and every re-grade of the run, however
-- the agent is edited meanwhile. Null: none declared (the check is then not graded).
ALTER TABLE eval_runs ADD COLUMN declared_tools jsonb;
