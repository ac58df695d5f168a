-- With several trials a case passes only when every trial passed: the run's pass rate counts
-- cases, not trials. These are counted once, when the run completes (null before): cases
-- graded, cases whose every trial passed (pass^k), cases with a passing trial (pass@k), and
-- cases whose trials disagree (flaky).
ALTER TABLE eval_runs
    ADD COLUMN cases_graded integer,
    ADD COLUMN cases_passed integer,
    ADD COLUMN cases_passed_any integer,
    ADD COLUMN flaky_count integer;
