"""What changed from one revision of a case to the next, as a case's history page shows it."""

from __future__ import annotations

import difflib
import json

import msgspec

from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.domain.web import Revision


def revision_diff(older: Revision | None, newer: Revision) -> list[str]:
    """What changed from one revision to the next, as lines of a unified diff of their JSON."""
    before = _lines(older.content) if older else []
    after = _lines(newer.content)
    name_before = f"revision {older.revision}" if older else "nothing"
    return list(
        difflib.unified_diff(
            before, after, fromfile=name_before, tofile=f"revision {newer.revision}", lineterm=""
        )
    )


def _lines(content: TestCaseContent) -> list[str]:
    shown = msgspec.to_builtins(content)
    return json.dumps(shown, indent=2, ensure_ascii=False).splitlines()
