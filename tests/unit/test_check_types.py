"""Every check type is complete wherever it shows: its metadata beside its class, its grader,
its form in the editor, the generation prompt and schema, and docs/reference/checks.md.

A new check type fails here until it has all of them, rather than showing a blank form or
being left out of what generation asks for.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jinja2
import msgspec
import pytest

from agentlasso.cli import pr_comment
from agentlasso.domain.checks import (
    CALIBRATION_FIELDS,
    CHECK_CLASSES,
    CHECK_TYPES,
    PRODUCT_NAMES,
    Check,
    OutputValidJson,
    generated_fields,
    type_of,
    written_fields,
)
from agentlasso.domain.field_errors import field_error_from_msgspec
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.generation.prompts import case_schema, check_fields_prose
from agentlasso.grading.registry import GRADERS
from agentlasso.web import case_form
from agentlasso.web.rendering import render
from tests.support.check_reference import PAGE, example_json, reference_page

TEMPLATES = Path(case_form.__file__).parent / "templates"
BY_TYPE = [pytest.param(cls, id=type_of(cls)) for cls in CHECK_CLASSES]


@pytest.mark.parametrize("check_class", BY_TYPE)
def test_each_check_type_states_its_metadata_beside_its_class(check_class: type[Check]) -> None:
    about = vars(check_class).get("about")
    assert about is not None, "its own `about`, not one inherited"
    assert about.name and about.asks
    assert re.fullmatch(r"Passes when [^\n]+\.", about.summary), "one sentence, 'Passes when'"
    assert "detail" in vars(check_class), "it says how its detail reads"
    example = msgspec.convert({"type": type_of(check_class), **about.example}, Check)
    assert type(example) is check_class
    assert isinstance(example.detail(), str)


def test_product_names_are_distinct_and_in_the_documented_order() -> None:
    assert tuple(PRODUCT_NAMES) == CHECK_TYPES
    assert len(set(PRODUCT_NAMES.values())) == len(CHECK_TYPES)
    # The CI machine's comment names them as the product does.
    assert pr_comment.PRODUCT_NAMES == PRODUCT_NAMES


@pytest.mark.parametrize("check_class", BY_TYPE)
def test_each_check_type_has_a_grader(check_class: type[Check]) -> None:
    assert GRADERS[check_class].check_type == type_of(check_class)


def test_the_graders_are_the_check_types() -> None:
    assert set(GRADERS) == set(CHECK_CLASSES)


@pytest.mark.parametrize("check_class", BY_TYPE)
def test_the_generation_prompt_says_which_fields_each_type_uses(check_class: type[Check]) -> None:
    prose = check_fields_prose()
    name, asks = type_of(check_class), check_class.about.asks
    clause = next(part for part in prose.split("; ") if re.search(rf"\b{name}\b", part))
    assert clause.endswith(f" {asks}")
    properties = case_schema()["properties"]["checks"]["items"]["properties"]
    assert name in properties["type"]["enum"]
    assert set(generated_fields(check_class)) <= set(properties)
    # What people add after a check is written (calibration examples) is never asked for.
    assert not set(CALIBRATION_FIELDS) & set(properties)


def test_the_generation_prose_joins_neighbours_that_ask_the_same() -> None:
    prose = check_fields_prose()
    assert prose.startswith("tool_called and tool_not_called use tool; tool_order uses ")
    assert prose.endswith("; llm_judge uses criterion (one plain-English claim about the reply)")


@pytest.mark.parametrize("check_class", BY_TYPE)
def test_each_check_type_has_its_form(check_class: type[Check]) -> None:
    assert (TEMPLATES / "checks" / f"{type_of(check_class)}.html").is_file()
    for field in written_fields(check_class):
        assert field in case_form.FIELD_READERS, f"the form reads {field}"


def editor(checks: list[case_form.CheckForm]) -> str:
    session = SimpleNamespace(
        csrf_token="token", scope="admin", role=None, user=SimpleNamespace(email="a@example.com")
    )
    return render(
        "case_editor.html", dataset=SimpleNamespace(id="d1", name="Support"), case=None,
        form=case_form.CaseForm(input="hi", checks=checks), errors={}, warnings={},
        product_names=PRODUCT_NAMES, older_checks=[], free_text=[], preview=None,
        pasted_reply="", pasted_tool_calls="", form_id="f1", based_on=None, saved=False,
        added=False, focus="", action_url="/x", session=session, path="/x",
    )  # fmt: skip


def test_the_editor_shows_every_field_of_every_check_type() -> None:
    # A calibration field is shown once a check has one (added from Review), so it is given.
    examples = '[{"reply": "20 EUR", "verdict": "passed"}]'
    forms = [case_form.CheckForm(type=type_of(cls), examples=examples) for cls in CHECK_CLASSES]
    html = editor(forms)
    for index, check_class in enumerate(CHECK_CLASSES):
        assert f"Check {index + 1}: {check_class.about.name}</legend>" in html
        for field in written_fields(check_class):
            assert f'name="checks-{index}-{field}"' in html, (type_of(check_class), field)
        # and offers to add one
        assert f'value="add:{type_of(check_class)}"' in html
    assert OutputValidJson.about.summary in html  # it has no field to show


def test_a_judge_check_without_examples_shows_no_examples_field() -> None:
    html = editor([case_form.CheckForm(type="llm_judge")])
    assert 'name="checks-0-criterion"' in html and 'name="checks-0-examples"' not in html


def test_a_check_type_without_its_form_is_an_error_not_a_blank(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unknown: Any = "output_is_haiku"  # named, as a new type would be, but with no form yet
    monkeypatch.setitem(PRODUCT_NAMES, unknown, "Output is a haiku")
    with pytest.raises(jinja2.TemplateNotFound, match="output_is_haiku"):
        editor([case_form.CheckForm(type=unknown)])


@pytest.mark.parametrize("check_class", BY_TYPE)
def test_the_form_writes_the_example_back(check_class: type[Check]) -> None:
    written = msgspec.convert({"type": type_of(check_class), **check_class.about.example}, Check)
    content = TestCaseContent(input="hi", checks=(msgspec.structs.replace(written, id="c1"),))
    again, errors = case_form.to_content(case_form.from_content(content))
    assert errors == {}
    assert again is not None and again.checks == content.checks


def test_an_unknown_check_type_is_named_with_the_known_ones() -> None:
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.convert({"input": "hi", "checks": [{"type": "output_is_haiku"}]}, TestCaseContent)
    detail = field_error_from_msgspec(caught.value).detail
    assert detail.endswith(f"unknown check type; expected one of {', '.join(CHECK_TYPES)}.")


@pytest.mark.parametrize("check_class", BY_TYPE)
def test_the_reference_page_shows_each_type_with_its_example(check_class: type[Check]) -> None:
    page = reference_page()
    assert f"## `{type_of(check_class)}` ({check_class.about.name})" in page
    assert f"```json\n{example_json(check_class)}\n```" in page


def test_the_committed_reference_page_is_the_generated_one() -> None:
    assert PAGE.read_text(encoding="utf-8") == reference_page(), (
        "docs/reference/checks.md is out of date: run "
        "`.venv/bin/python -m tests.support.check_reference`"
    )
