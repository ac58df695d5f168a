"""Schemathesis against a real `agentlasso api` process, as the suite's test and the thorough
run (tests/perf/schemathesis_thorough.py) both run it.

    st --config-file tests/schemathesis.toml run URL/schema/openapi.json -H "x-api-key: KEY"
       --seed SEED --max-examples N

The API process reaches loopback only (every other name resolves to a stand-in address it then
cannot connect to, so the fuzzer's agents register but are never called anywhere), and its model
is a fake Anthropic API on loopback, so generation and its drafts are reached too.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support.fake_anthropic import FAKE_API_KEY, FakeAnthropic
from tests.support.processes import ROOT, api_process

CONFIG = ROOT / "tests" / "schemathesis.toml"
HOOKS = "tests.support.schemathesis_hooks"
# A seed that never changes (a failure it finds is found again), and one per day (each day
# explores requests the others did not).
FIXED_SEED = 7
# What a seed changes: the examples and coverage phases are the same whatever the seed.
ALL_PHASES, SEEDED_PHASES = "examples,coverage,fuzzing,stateful", "fuzzing,stateful"


def seed_of_the_day(today: datetime.date | None = None) -> int:
    """A seed that changes every day, the same all day: 20261202 on 2 December 2026."""
    return int((today or datetime.date.today()).strftime("%Y%m%d"))


@contextlib.contextmanager
def fuzzable_api(database_url: str, redis_url: str, queue_name: str) -> Iterator[str]:
    """`agentlasso api` as Schemathesis meets it; yields its base URL."""
    with FakeAnthropic() as fake:
        env = {
            "AGENTLASSO_QUEUE": queue_name,
            # High enough that the fuzzer's bursts are not what is measured here.
            "AGENTLASSO_RATE_LIMIT_PER_S": "10000",
            "AGENTLASSO_RATE_LIMIT_BURST": "100000",
            "AGENTLASSO_QUOTA_GENERATIONS_PER_MIN": "100000",
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "ANTHROPIC_BASE_URL": fake.base_url,
        }
        with api_process(database_url, redis_url, env, loopback_only=True) as (url, _pid):
            yield url


async def run_schemathesis(
    url: str, api_key: str, *, seed: int, max_examples: int, report_dir: Path,
    config: Path = CONFIG, phases: str = ALL_PHASES,
) -> tuple[int, str]:  # fmt: skip
    """One `st run` of these phases and every check: its exit status and its output."""
    st = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).with_name("st")), "--no-color", "--config-file", str(config),
        "run", f"{url}/schema/openapi.json", "-H", f"x-api-key: {api_key}", "--workers", "1",
        "--seed", str(seed), "--max-examples", str(max_examples), "--phases", phases,
        "--report", "junit", "--report-dir", str(report_dir),
        cwd=ROOT, env={**os.environ, "SCHEMATHESIS_HOOKS": HOOKS},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    stdout, _ = await asyncio.wait_for(st.communicate(), timeout=3600)
    assert st.returncode is not None
    return st.returncode, stdout.decode()


def summary(output: str) -> str:
    """The run's summary: its phases, failures, warnings, counts and seed."""
    found = re.search(r"^=+ SUMMARY =+$", output, re.MULTILINE)
    return output[found.start() :] if found else output[-3000:]
