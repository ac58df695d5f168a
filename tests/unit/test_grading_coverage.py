"""The grading package stays at 100% branch coverage from its own pure tests (issue 3).

Run in a subprocess so that the whole suite enforces it while a developer's run of a few
tests does not trip over a coverage floor.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_grading_has_full_branch_coverage() -> None:
    completed = subprocess.run(
        [
            sys.executable, "-m", "pytest", "tests/unit/grading", "-q", "-p", "no:cacheprovider",
            "--cov=agentlasso.grading", "--cov-branch", "--cov-report=term-missing:skip-covered",
            "--cov-fail-under=100",
        ],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    assert "Required test coverage of 100% reached" in completed.stdout
