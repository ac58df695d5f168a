"""promptfoo test files and configs (YAML or JSON): each test's vars become a case's input and
its asserts (after defaultTest's, as promptfoo runs them) its checks.

One var is the input as it is; several make an object input of all of them (the prompt
template is not applied: an agent gets the case's input, not a rendered prompt). A var holding
a list of strings makes one case per value, as promptfoo expands it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import IO, Any

import msgspec

from agentlasso.errors import FieldError, InvalidInput
from agentlasso.importers.documents import load_document, read_bounded
from agentlasso.importers.items import (
    ImportItem,
    ItemReport,
    NotImported,
    Source,
    js_string,
    unreadable,
)
from agentlasso.importers.promptfoo_asserts import Mapped, map_assert

MAX_CASES_PER_TEST = 1_000
_FILE_NOTES = {
    "prompts": "an agent gets each case's input, not a rendered prompt",
    "providers": "the agent under test is set in Settings",
    "scenarios": "scenarios are not expanded; write their tests out",
    "redteam": "red-team generation is not part of a dataset",
}
_TEST_NOTES = {
    "threshold": "a case passes when every check passes (stricter than a score threshold)",
    "metadata": "a test case has no metadata",
    "provider": "the agent under test is set in Settings",
    "providers": "the agent under test is set in Settings",
    "providerOutput": "a case's reply comes from the agent",
    "prompts": "an agent gets each case's input, not a rendered prompt",
    "assertScoringFunction": "a case's score is the mean of its checks",
}


class _Defaults(msgspec.Struct, frozen=True):
    """What defaultTest gives every test."""

    asserts: list[dict[str, Any]]
    variables: dict[str, Any]
    options: dict[str, Any]


def read(file: IO[bytes]) -> Source:
    """The tests of a promptfoo test file (a list) or config (`tests:`)."""
    document = load_document(read_bounded(file))
    notes: list[NotImported] = []
    if isinstance(document, list):
        tests, base, defaults = document, "", _Defaults([], {}, {})
    elif isinstance(document, dict):
        tests, defaults, notes = _config(document)
        base = "/tests"
    else:
        raise _file_problem("/", "Expected a list of promptfoo tests, or a config with tests.")
    return Source(notes=tuple(notes), items=_items(tests, base, defaults), noun="test")


def _config(config: dict[str, Any]) -> tuple[list[Any], _Defaults, list[NotImported]]:
    tests = config.get("tests")
    if isinstance(tests, str):
        raise _file_problem("/tests", f"tests names a file ({tests}); files are not followed: "
                            "import that file itself.")  # fmt: skip
    if not isinstance(tests, list):
        raise _file_problem("/tests", "A promptfoo config needs tests: a list of tests.")
    notes = [NotImported(key, why) for key, why in _FILE_NOTES.items() if key in config]
    default = config.get("defaultTest")
    if isinstance(default, str):
        notes.append(NotImported("defaultTest", "file:// references are not followed"))
        default = None
    return tests, _defaults(default), notes


def _defaults(default: Any) -> _Defaults:
    if default is None:
        return _Defaults([], {}, {})
    if not isinstance(default, dict):
        raise _file_problem("/defaultTest", "defaultTest is an object (assert, vars, options).")
    problems = _assert_problems(default.get("assert"), "/defaultTest/assert")
    if problems:
        raise InvalidInput("Nothing was imported: defaultTest cannot be read.", problems)
    variables, options = default.get("vars") or {}, default.get("options") or {}
    if not isinstance(variables, dict) or not isinstance(options, dict):
        raise _file_problem("/defaultTest", "defaultTest's vars and options are objects.")
    return _Defaults(default.get("assert") or [], variables, options)


def _file_problem(pointer: str, detail: str) -> InvalidInput:
    return InvalidInput(
        "Nothing was imported: the file is not a promptfoo test file or config.",
        [FieldError(pointer=pointer, detail=detail)],
    )


def _assert_problems(asserts: Any, pointer: str) -> list[FieldError]:
    """What makes the asserts unreadable (each must be an object with a type)."""
    if asserts is None:
        return []
    if not isinstance(asserts, list):
        return [FieldError(pointer=pointer, detail="assert is a list of asserts.")]
    problems: list[FieldError] = []
    for index, assertion in enumerate(asserts):
        at = f"{pointer}/{index}"
        if not isinstance(assertion, dict):
            problems.append(FieldError(pointer=at, detail="An assert is an object with a type."))
        elif not isinstance(assertion.get("type"), str):
            problems.append(FieldError(pointer=f"{at}/type", detail="An assert needs a type."))
        elif assertion["type"] == "assert-set":
            problems += _assert_problems(assertion.get("assert"), f"{at}/assert")
    return problems


def _items(tests: list[Any], base: str, defaults: _Defaults) -> Iterator[ImportItem]:
    for index, test in enumerate(tests):
        number, pointer = index + 1, f"{base}/{index}"
        label = f"test {number}"
        if isinstance(test, str):
            why = "file:// references are not followed: import that file itself"
            report = ItemReport(
                item=number, label=label, cases=0, not_imported=(NotImported(test, why),)
            )
            yield ImportItem(report=report)
        elif not isinstance(test, dict):
            detail = "A test is an object with vars and assert."
            yield unreadable(number, label, [FieldError(pointer=pointer, detail=detail)])
        else:
            yield _test_item(number, pointer, test, defaults)


def _test_item(number: int, pointer: str, test: dict[str, Any], defaults: _Defaults) -> ImportItem:
    label = f"test {number}"
    problems = _assert_problems(test.get("assert"), f"{pointer}/assert")
    variables, options = test.get("vars"), test.get("options")
    if variables is not None and not isinstance(variables, dict | str):
        problems.append(FieldError(pointer=f"{pointer}/vars", detail="vars is an object."))
    if options is not None and not isinstance(options, dict):
        problems.append(FieldError(pointer=f"{pointer}/options", detail="options is an object."))
    if problems:
        return unreadable(number, label, problems)
    return _TestReading(number, pointer, test, defaults).item()


class _TestReading:
    """One readable test, read into its cases and report."""

    def __init__(
        self, number: int, pointer: str, test: dict[str, Any], defaults: _Defaults
    ) -> None:
        self.number, self.pointer, self.test = number, pointer, test
        self.options = {**defaults.options, **(test.get("options") or {})}
        self.imported: list[str] = []
        self.lost: list[NotImported] = []
        own = test.get("vars")
        if isinstance(own, str):
            self.lost.append(NotImported("vars", "file:// references are not followed"))
            own = {}
        self.variables = {**defaults.variables, **(own or {})}
        placed = [(f"assert {i + 1}", f"{pointer}/assert/{i}", a)
                  for i, a in enumerate(test.get("assert") or [])]  # fmt: skip
        if not self.options.get("disableDefaultAsserts"):
            placed = [
                (f"defaultTest assert {i + 1}", f"/defaultTest/assert/{i}", a)
                for i, a in enumerate(defaults.asserts)
            ] + placed
        self.asserts = placed

    def item(self) -> ImportItem:
        label = f"test {self.number}"
        combinations = self._combinations()
        if isinstance(combinations, str):
            return self._skipped(combinations)
        cases: list[dict[str, Any]] = []
        origins: list[tuple[str, str]] = []
        for index, variables in enumerate(combinations):
            case, origins = self._case(variables, report=index == 0)
            if case is None:
                return self._skipped("it has no vars, and a test case needs an input")
            cases.append(case)
        self._test_notes()
        if len(cases) > 1:
            self.imported.insert(0, f"{len(cases)} cases: its vars' lists expanded")
        report = ItemReport(
            item=self.number, label=label, cases=len(cases),
            imported=tuple(self.imported), not_imported=tuple(self.lost),
        )  # fmt: skip
        return ImportItem(report=report, cases=tuple(cases), origins=tuple(origins))

    def _skipped(self, why: str) -> ImportItem:
        lost = (NotImported(f"test {self.number}", why), *self.lost)
        report = ItemReport(item=self.number, label=f"test {self.number}", cases=0,
                            not_imported=lost)  # fmt: skip
        return ImportItem(report=report)

    def _combinations(self) -> list[dict[str, Any]] | str:
        """The vars of each case: promptfoo makes one per value of a var's list of strings."""
        usable = {}
        for name, value in self.variables.items():
            if isinstance(value, str) and value.startswith("file://"):
                self.lost.append(NotImported(f"var {name}", "file:// references are not followed"))
            else:
                usable[name] = value
        if self.options.get("disableVarExpansion"):
            return [usable]
        choices = [
            value if isinstance(value, list) and value and isinstance(value[0], str) else [value]
            for value in usable.values()
        ]
        count = 1
        for values in choices:
            count *= len(values)
        if count > MAX_CASES_PER_TEST:
            return f"its vars expand to {count:,} cases; at most {MAX_CASES_PER_TEST:,} a test"
        return [dict(zip(usable, values, strict=True)) for values in itertools.product(*choices)]

    def _case(
        self, variables: dict[str, Any], report: bool
    ) -> tuple[dict[str, Any] | None, list[tuple[str, str]]]:
        if not variables:
            return None, []
        case: dict[str, Any] = {"input": _input_of(variables)}
        origins = [("/input", f"{self.pointer}/vars")]
        description = self.test.get("description")
        if description is not None:
            case["description"] = js_string(description)
            origins.append(("/description", f"{self.pointer}/description"))
        if report:
            self.imported.append(_input_words(variables))
            if description is not None:
                self.imported.append("description")
        checks: list[dict[str, Any]] = []
        for label, at, assertion in self.asserts:
            for check_at, check in self._checks(label, at, assertion, variables, report):
                origins.append((f"/checks/{len(checks)}", check_at))
                checks.append(check)
        case["checks"] = checks
        return case, origins

    def _checks(
        self, label: str, at: str, assertion: dict[str, Any], variables: dict[str, Any],
        report: bool,
    ) -> list[tuple[str, dict[str, Any]]]:  # fmt: skip
        """The checks of one assert (an assert-set's children, each in turn)."""
        kind = assertion["type"]
        if kind == "assert-set":
            if report and assertion.get("threshold") is not None:
                self.lost.append(NotImported(f"{label} (assert-set) threshold",
                                             _TEST_NOTES["threshold"]))  # fmt: skip
            children = assertion.get("assert") or []
            return [
                pair
                for index, child in enumerate(children)
                for pair in self._checks(
                    f"{label}.{index + 1}", f"{at}/assert/{index}", child, variables, report
                )
            ]
        mapped: Mapped | str = map_assert(assertion, variables)
        if self.options.get("transform") is not None:
            mapped = "options.transform changes the output first; checks grade the reply as it is"
        if report:
            self._report(f"{label} ({kind})", mapped)
        if isinstance(mapped, str):
            return []
        return [(at, check) for check in mapped.checks]

    def _report(self, what: str, mapped: Mapped | str) -> None:
        if isinstance(mapped, str):
            self.lost.append(NotImported(what, mapped))
            return
        self.imported.append(f"{what} as {mapped.how}")
        self.lost += [NotImported(f"{what} {field}", why) for field, why in mapped.losses]

    def _test_notes(self) -> None:
        for key, why in _TEST_NOTES.items():
            if self.test.get(key) not in (None, {}, []):
                self.lost.append(NotImported(key, why))


def _input_of(variables: dict[str, Any]) -> str | dict[str, Any]:
    """One var: its value (text as it is, an object as an object input); several: an object."""
    if len(variables) > 1:
        return dict(variables)
    (value,) = variables.values()
    if isinstance(value, dict):
        return value
    return value if isinstance(value, str) else js_string(value)


def _input_words(variables: dict[str, Any]) -> str:
    names = ", ".join(variables)
    if len(variables) == 1:
        return f"input: var {names}"
    return f"input: vars {names} (as one object)"
