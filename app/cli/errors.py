"""How `agentlasso ci` and `agentlasso run` report a platform they cannot use (exit code 2)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any

from agentlasso.cli.gate_report import EXIT_UNAVAILABLE
from agentlasso.client import ClientError, PlatformUnavailable

# Fields of a request the user named by a flag: a refusal of one names the flag instead.
FLAGS_BY_FIELD = {"/baseline_run_id": "--baseline"}


def run_reporting_errors(base_url: str, main: Coroutine[Any, Any, int]) -> int:
    """Run the command; a platform that cannot be reached or refuses is exit 2, said plainly."""
    try:
        return asyncio.run(main)
    except PlatformUnavailable as exc:
        print(f"error: AgentLasso could not be reached at {base_url}: {exc}", file=sys.stderr)
    except ClientError as exc:
        flagged = [e for e in exc.errors if e.get("pointer") in FLAGS_BY_FIELD]
        if flagged:
            flag = FLAGS_BY_FIELD[flagged[0]["pointer"]]
            print(f"error: {flag}: {flagged[0].get('detail') or exc.detail}", file=sys.stderr)
            return EXIT_UNAVAILABLE
        print(f"error: AgentLasso refused the request: {exc}", file=sys.stderr)
        for error in exc.errors:
            where = error.get("pointer") or error.get("parameter")
            print(f"  {where}: {error.get('detail')}", file=sys.stderr)
    return EXIT_UNAVAILABLE
