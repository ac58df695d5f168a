"""The thorough Schemathesis run: every phase, every check, several seeds, many examples.

The suite's test (tests/integration/test_schemathesis.py) runs two seeds with a few examples
each to stay within minutes; this runs as many as asked, one after another against one fresh
API, and prints each run's summary. Run (about 8 minutes a seed at 50 examples on 2 cores):

    .venv/bin/python -m tests.perf.schemathesis_thorough [--seeds 1,2,3,random]
        [--max-examples 50] [--max-steps 50]

It exits non-zero when any run found something.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
import tempfile
import uuid
from pathlib import Path

from tests.perf.harness import new_key, server_urls
from tests.support.databases import drop_database, fresh_database
from tests.support.schemathesis_run import CONFIG, fuzzable_api, run_schemathesis, summary


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="1,2,3,random")
    parser.add_argument("--max-examples", type=int, default=50)
    parser.add_argument("--max-steps", type=int, default=50)
    args = parser.parse_args()
    seeds = [random.randrange(2**31) if seed == "random" else int(seed)
             for seed in args.seeds.split(",")]  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="agentlasso-schemathesis-"))
    config = work / "schemathesis.toml"
    steps = f"max-steps = {args.max_steps}"
    config.write_text(re.sub(r"^max-steps = \d+", steps, CONFIG.read_text(), flags=re.M))
    with server_urls() as (postgres_url, redis_url):
        database_url = asyncio.run(fresh_database(postgres_url, "agentlasso_bench"))
        try:
            queue = f"agentlasso:bench:{uuid.uuid4().hex[:12]}"
            with fuzzable_api(database_url, redis_url, queue) as url:
                key = new_key(database_url)
                failed = [seed for seed in seeds if not _run(url, key, seed, args, config, work)]
        finally:
            asyncio.run(drop_database(postgres_url, database_url))
    print(f"seeds {seeds}: " + (f"found something with {failed}" if failed else "nothing found"))
    return 1 if failed else 0


def _run(url: str, key: str, seed: int, args: argparse.Namespace, config: Path,
         work: Path) -> bool:  # fmt: skip
    status, output = asyncio.run(run_schemathesis(
        url, key, seed=seed, max_examples=args.max_examples, report_dir=work / str(seed),
        config=config,
    ))  # fmt: skip
    print(output if status else summary(output), flush=True)
    return status == 0


if __name__ == "__main__":
    sys.exit(main())
