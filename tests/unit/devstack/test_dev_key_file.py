"""The dev API key file `agentlasso dev` writes: readable by its owner only."""

from __future__ import annotations

import stat
from pathlib import Path

from agentlasso.devstack.bootstrap import write_private


def test_the_dev_key_file_is_made_private_even_when_it_existed(tmp_path: Path) -> None:
    key_file = tmp_path / "dev-api-key"
    key_file.write_text("old\n")
    key_file.chmod(0o644)
    write_private(key_file, "al_new")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.read_text() == "al_new\n"
