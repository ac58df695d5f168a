"""Whether the model's requests go through a proxy the environment names: HTTPS_PROXY,
HTTP_PROXY or ALL_PROXY for the base URL's scheme, unless NO_PROXY names its host."""

from __future__ import annotations

import pytest

from agentlasso.judge.model_transport import proxied

PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


@pytest.mark.parametrize(
    ("environment", "base_url", "expected"),
    [
        ({}, None, False),
        ({"HTTPS_PROXY": "http://proxy:3128"}, None, True),  # api.anthropic.com, over https
        ({"https_proxy": "http://proxy:3128"}, "https://model.internal", True),
        ({"HTTP_PROXY": "http://proxy:3128"}, "https://model.internal", False),
        ({"HTTP_PROXY": "http://proxy:3128"}, "http://model.internal:8080", True),
        ({"ALL_PROXY": "http://proxy:3128"}, "https://model.internal", True),
        (
            {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "model.internal"},
            "https://model.internal",
            False,
        ),
        (
            {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": ".internal"},
            "https://model.internal",
            False,
        ),
        ({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "*"}, None, False),
        (
            {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "other.host"},
            "https://model.internal",
            True,
        ),
        # ANTHROPIC_BASE_URL reaches here through the settings: an http address takes no
        # https proxy.
        ({"HTTPS_PROXY": "http://proxy:3128"}, "http://127.0.0.1:9", False),
    ],
)
def test_the_proxy_is_used_where_the_environment_names_one(
    monkeypatch: pytest.MonkeyPatch,
    environment: dict[str, str],
    base_url: str | None,
    expected: bool,
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert proxied(base_url) is expected
