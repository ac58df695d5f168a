"""Schemathesis against a real API process: the API's own description is the judge of the API.

Every phase runs (examples, coverage, fuzzing, stateful, the last following the description's
links from every create) with every check: no 5xx, no status or content type the description
does not list, no schema-valid request refused, no invalid one accepted, no response that
breaks its schema, nothing created that its follow-up cannot find, nothing usable after a
delete. The few operations that may refuse a schema-valid request (for a rule no schema can
say) are listed, each with its rule, in tests/schemathesis.toml.

Two seeds, at once: a fixed one (every phase), and one that changes every day (the
phases a seed changes: fuzzing and stateful), so the suite explores new requests over time and
still names the seed of whatever it finds. A thorough run
(more seeds, more examples) is tests/perf/schemathesis_thorough.py.
"""

from __future__ import annotations

import asyncio
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

# Enough to find what the description and the server disagree on, within a few minutes: the
# fixed seed's every phase sends each operation this many generated requests.
MAX_EXAMPLES = 15
# The day's seed repeats only fuzzing and stateful, over operations the fixed seed has already
# sent MAX_EXAMPLES each (and the examples and coverage phases more): fewer suffice for new ones.
DAILY_MAX_EXAMPLES = 8


async def one_seed(
    url: str, database_url: str, report_dir: Path, seed: int, phases: str, max_examples: int
) -> str | None:
    """One Schemathesis run as a project of its own (so two runs at once never meet): None, or
    the end of its output when it found something."""
    api_key = await new_project_key(database_url)
    status, output = await run_schemathesis(
        url, api_key, seed=seed, max_examples=max_examples,
        report_dir=report_dir / str(seed), phases=phases,
    )  # fmt: skip
    print(summary(output))  # for whoever reads the log
    return output[-20_000:] if status != 0 else None


@pytest.mark.slow
async def test_schemathesis_finds_nothing(
    settings: Settings, database_url: str, tmp_path: Path
) -> None:
    # The two seeds run at once, each its own `st` process on its own project: the suite's
    # longest test then takes about as long as its longer run, not the two together.
    with fuzzable_api(settings.database_url, settings.redis_url, settings.queue_name) as url:
        outcomes = await asyncio.gather(
            one_seed(url, database_url, tmp_path, FIXED_SEED, ALL_PHASES, MAX_EXAMPLES),
            one_seed(
                url, database_url, tmp_path, seed_of_the_day(), SEEDED_PHASES, DAILY_MAX_EXAMPLES
            ),
        )
    found = [output for output in outcomes if output is not None]
    assert not found, "\n\n".join(found)
