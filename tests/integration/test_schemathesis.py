"""Schemathesis against a real API process: the API's own description is the judge of the API.

Every phase runs (examples, coverage, fuzzing, stateful) with every check: no 5xx, no status or
content type the description does not list, no schema-valid request refused, no invalid one
accepted, no response that breaks its schema, nothing usable after a delete. The API process
reaches loopback only, so the agents the fuzzer registers are never called anywhere. The few
operations that may refuse a schema-valid request (for a rule no schema can say) are listed,
each with its rule, in tests/schemathesis.toml.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from app.config import Settings
from tests.support.databases import new_project_key
from tests.support.processes import ROOT, api_process

CONFIG = ROOT / "tests" / "schemathesis.toml"


@pytest.mark.slow
async def test_schemathesis_finds_nothing(
    settings: Settings, database_url: str, tmp_path: Path
) -> None:
    api_key = await new_project_key(database_url)
    env = {
        "AGENTLASSO_QUEUE": settings.queue_name,
        # High enough that the fuzzer's bursts are not what is measured here.
        "AGENTLASSO_RATE_LIMIT_PER_S": "10000",
        "AGENTLASSO_RATE_LIMIT_BURST": "100000",
    }
    with api_process(settings.database_url, settings.redis_url, env, loopback_only=True) as (
        url,
        _pid,
    ):
        st = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).with_name("st")),
            "--no-color",
            "--config-file",
            str(CONFIG),
            "run",
            f"{url}/schema/openapi.json",
            "-H",
            f"x-api-key: {api_key}",
            "--workers",
            "1",
            "--report",
            "junit",
            "--report-dir",
            str(tmp_path),
            cwd=ROOT,
            env={**os.environ, "SCHEMATHESIS_HOOKS": "tests.support.schemathesis_hooks"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        stdout, _ = await asyncio.wait_for(st.communicate(), timeout=900)
    output = stdout.decode()
    print(output[-3000:])  # the summary line, for whoever reads the log
    assert st.returncode == 0, output[-20_000:]
