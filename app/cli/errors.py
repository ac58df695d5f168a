"""How `agentlasso ci` and `agentlasso run` report a platform they cannot use (exit code 2)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from typing import Any

from app.cli.gate_report import EXIT_UNAVAILABLE
from app.client import ClientError, PlatformUnavailable


def run_reporting_errors(base_url: str, main: Coroutine[Any, Any, int]) -> int:
    """Run the command; a platform that cannot be reached or refuses is exit 2, said plainly."""
    try:
        return asyncio.run(main)
    except PlatformUnavailable as exc:
        print(f"error: AgentLasso could not be reached at {base_url}: {exc}", file=sys.stderr)
    except ClientError as exc:
        print(f"error: AgentLasso refused the request: {exc}", file=sys.stderr)
        for error in exc.errors:
            where = error.get("pointer") or error.get("parameter")
            print(f"  {where}: {error.get('detail')}", file=sys.stderr)
    return EXIT_UNAVAILABLE
