"""Each setting is declared once, with its variable, type, default, bounds and a line of
documentation, and docs/reference/settings.md is made from the declarations: a setting added
without its line, or the page not made again, fails here."""

from __future__ import annotations

import re
from collections import Counter
from typing import Annotated

import msgspec
import pytest

from agentlasso.config import DECLARED, ENVIRONMENT_VARIABLES, Settings
from agentlasso.config.declaring import declared, field_docs
from agentlasso.config.reference import render
from agentlasso.config.settings import STORAGE
from tests.support.source import FOLDERS, ROOT, module_of

PAGE = ROOT / "docs" / "reference" / "settings.md"
# Reading the environment by a variable's name; passing it whole to a child process is not.
READS_THE_ENVIRONMENT = re.compile(r"\bos\.environ\.get\(|\bos\.environ\[|\bos\.getenv\(")


def test_the_reference_page_is_the_one_the_declarations_make() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/reference/settings.md is not what the declarations in app/config/settings.py"
        " make: python -m agentlasso.config.reference > docs/reference/settings.md"
    )


@pytest.mark.parametrize("struct", DECLARED, ids=lambda struct: struct.__name__)
def test_every_setting_has_its_line_of_documentation(struct: type[msgspec.Struct]) -> None:
    docs = field_docs(struct)
    assert [setting.field for setting in declared(struct) if not docs.get(setting.field)] == []


def test_each_variable_gives_one_setting() -> None:
    variables = Counter(setting.variable for struct in DECLARED for setting in declared(struct))
    assert [name for name, count in variables.items() if count > 1] == []
    assert list(ENVIRONMENT_VARIABLES) == [field.name for field in msgspec.structs.fields(Settings)]


def test_a_field_declared_without_its_variable_is_refused() -> None:
    class Bare(msgspec.Struct, frozen=True):
        size: int = 3

    with pytest.raises(TypeError, match=r"Bare\.size is not declared with one Env"):
        declared(Bare)


def test_a_field_without_a_docstring_has_no_line() -> None:
    class Undocumented(msgspec.Struct, frozen=True):
        size: Annotated[int, STORAGE("AGENTLASSO_SIZE")] = 3

    assert field_docs(Undocumented) == {"size": ""}


def test_only_the_configuration_reads_the_environment() -> None:
    readers = [
        module_of(path)
        for folder in FOLDERS.values()
        for path in sorted(folder.rglob("*.py"))
        if not module_of(path).startswith("agentlasso.config")
        and READS_THE_ENVIRONMENT.search(path.read_text(encoding="utf-8"))
    ]
    assert readers == [], "read settings through agentlasso.config, declared in its settings"


# Variables the guides may name that are not AgentLasso's settings: the test harness's, and the
# GitHub Actions variable the CI gate guide's workflow reads.
NOT_OURS = {"AGENTLASSO_REQUIRE_BROWSER", "AGENTLASSO_CHROMIUM", "AGENTLASSO_DATASET"}


def test_every_variable_the_docs_and_deploy_files_name_is_declared() -> None:
    # The guides repeat some settings where they explain them; a renamed or removed setting
    # must not live on there, nor in a manifest that would set it for nothing.
    declared_names = {s.variable for struct in DECLARED for s in declared(struct)}
    # The contract is left out: it specifies settings of features not built yet (sections 13-18).
    docs = [path for path in ROOT.glob("docs/**/*.md") if path.name != "contract.md"]
    files = [*docs, ROOT / "README.md", *ROOT.glob("deploy/**/*")]
    named = {
        (path.relative_to(ROOT).as_posix(), name)
        for path in files
        if path.is_file() and path.suffix not in {".json", ".png"}
        for name in re.findall(r"\bAGENTLASSO_[A-Z0-9_]*[A-Z0-9]", path.read_text("utf-8"))
    }
    assert (
        sorted((path, name) for path, name in named if name not in declared_names | NOT_OURS) == []
    )
