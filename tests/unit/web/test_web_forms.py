"""What a form's field errors say: the API's limits, in the words of the person filling it in."""

from __future__ import annotations

import msgspec
import pytest

from agentlasso.schemas.datasets import DatasetCreate
from agentlasso.web.forms import checked, in_words


@pytest.mark.parametrize(
    ("detail", "shown"),
    [
        ("Expected `str` of length >= 1", "This cannot be empty."),
        ("Expected `str` of length <= 200", "At most 200 characters."),
        ("Expected `float` >= 0.0", "At least 0.0."),
        ("Expected `int` <= 100", "At most 100."),
        ("Expected `float`, got `str`", "A number, please."),
        ("No such agent in your project.", "No such agent in your project."),
    ],
)
def test_a_limit_is_said_in_plain_words(detail: str, shown: str) -> None:
    assert in_words(detail) == shown


def test_an_empty_name_is_named_by_its_field_in_plain_words() -> None:
    errors: dict[str, str] = {}
    assert checked({"name": ""}, DatasetCreate, errors) is None
    assert errors == {"name": "This cannot be empty."}


def test_valid_fields_are_taken_as_the_api_takes_them() -> None:
    errors: dict[str, str] = {}
    written = checked({"name": "Refunds"}, DatasetCreate, errors)
    assert errors == {}
    assert msgspec.to_builtins(written)["name"] == "Refunds"
