"""Schemathesis against a real API process: the API's own description is the judge of the API.

Every phase runs (examples, coverage, fuzzing, stateful, the last following the description's
links from every create) with every check: no 5xx, no status or content type the description
does not list, no schema-valid request refused, no invalid one accepted, no response that
breaks its schema, nothing created that its follow-up cannot find, nothing usable after a
delete. The few operations that may refuse a schema-valid request (for a rule no schema can
say) are listed, each with its rule, in tests/schemathesis.toml.

Two seeds, one after the other: a fixed one (every phase), and one that changes every day (the
phases a seed changes: fuzzing and stateful), so the suite explores new requests over time and
still names the seed of whatever it finds. A thorough run
(more seeds, more examples) is tests/perf/schemathesis_thorough.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlasso.config import Settings
from tests.support.databases import new_project_key
from tests.support.schemathesis_run import (
    ALL_PHASES,
    FIXED_SEED,
    SEEDED_PHASES,
    fuzzable_api,
    run_schemathesis,
    seed_of_the_day,
    summary,
)

# Enough to find what the description and the server disagree on, within a few minutes.
MAX_EXAMPLES = 15


@pytest.mark.slow
async def test_schemathesis_finds_nothing(
    settings: Settings, database_url: str, tmp_path: Path
) -> None:
    api_key = await new_project_key(database_url)
    found = []
    with fuzzable_api(settings.database_url, settings.redis_url, settings.queue_name) as url:
        for seed, phases in ((FIXED_SEED, ALL_PHASES), (seed_of_the_day(), SEEDED_PHASES)):
            status, output = await run_schemathesis(
                url, api_key, seed=seed, max_examples=MAX_EXAMPLES,
                report_dir=tmp_path / str(seed), phases=phases,
            )  # fmt: skip
            print(summary(output))  # for whoever reads the log
            if status != 0:
                found.append(output[-20_000:])
    assert not found, "\n\n".join(found)
