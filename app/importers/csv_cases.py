"""Test cases as CSV: a header row naming the columns, one case a row; the export writes every
column, and imports back unchanged.

Text columns hold text as it is (an `input` cell that looks like JSON stays text: a user's
message may well be JSON); the JSON columns hold JSON: `input_json` (a structured input, or
an input that is the empty string), `conversation`, `checks`, `evaluation_criteria_json`,
`tool_fixtures`.
An empty cell is an absent field. `tags` is comma-separated.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import IO, Any

import msgspec

from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.errors import FieldError, InvalidInput
from agentlasso.importers.items import ImportItem, ItemReport, Source, unreadable

TEXT_COLUMNS = ("input", "expected_output", "evaluation_type", "description")
JSON_COLUMNS = (
    "input_json", "conversation", "checks", "evaluation_criteria_json", "tool_fixtures",
)  # fmt: skip
NUMBER_COLUMNS = ("min_confidence", "checks_version")
COLUMNS = (
    "input", "input_json", "conversation", "expected_output", "evaluation_type",
    "min_confidence", "description", "tags", "checks", "checks_version",
    "evaluation_criteria_json", "tool_fixtures",
)  # fmt: skip
# The JSON Lines import's camelCase spellings, taken here too.
_ALIASES = {
    "expectedOutput": "expected_output",
    "evaluationType": "evaluation_type",
    "minConfidence": "min_confidence",
    "evaluationCriteriaJson": "evaluation_criteria_json",
    "inputJson": "input_json",
}
# A cell may hold a whole case's input (up to a million characters), past csv's default.
csv.field_size_limit(16 * 1024 * 1024)


def read(file: IO[bytes]) -> Source:
    """The rows of a CSV file with a header row."""
    text = io.TextIOWrapper(file, encoding="utf-8-sig", newline="")
    rows = csv.reader(text, strict=True)
    header = _header(rows)
    return Source(notes=(), items=_items(rows, header), noun="row")


def _header(rows: Any) -> list[str]:
    try:
        cells = next(rows, None)
    except (csv.Error, UnicodeDecodeError) as exc:
        raise _header_problem(f"The header row cannot be read: {exc}") from exc
    if not cells:
        raise _header_problem("A CSV import starts with a header row naming its columns.")
    names = [_ALIASES.get(cell.strip(), cell.strip()) for cell in cells]
    for name in names:
        if name not in COLUMNS:
            raise _header_problem(
                f"Unknown column {name!r}: the columns are {', '.join(COLUMNS)}.", name
            )
        if names.count(name) > 1:
            raise _header_problem(f"The column {name!r} is given twice.", name)
    if not {"input", "input_json", "conversation"} & set(names):
        raise _header_problem("A CSV import needs an input (or input_json, or conversation).")
    return names


def _header_problem(detail: str, column: str | None = None) -> InvalidInput:
    error = FieldError(detail=detail, line=1, pointer=f"/{column}" if column else "/")
    return InvalidInput("Nothing was imported: the header row is not valid.", [error])


def _items(rows: Any, header: list[str]) -> Iterator[ImportItem]:
    number, line = 0, rows.line_num + 1
    while True:
        try:
            cells = next(rows)
        except StopIteration:
            return
        except (csv.Error, UnicodeDecodeError) as exc:
            number += 1
            error = FieldError(pointer="/", detail=f"The row cannot be read: {exc}")
            yield unreadable(number, f"row {number}", [error], line)
            return
        number += 1
        yield _row(number, line, header, cells)
        line = rows.line_num + 1


def _row(number: int, line: int, header: list[str], cells: list[str]) -> ImportItem:
    label = f"row {number}"
    if len(cells) > len(header):
        detail = f"The row has {len(cells)} cells; the header names {len(header)} columns."
        return unreadable(number, label, [FieldError(pointer="/", detail=detail)], line)
    case: dict[str, Any] = {}
    problems: list[FieldError] = []
    for name, cell in zip(header, cells, strict=False):
        if cell == "":
            continue
        value = _cell(name, cell)
        if isinstance(value, FieldError):
            problems.append(value)
        else:
            case[name] = value
    if "input_json" in case:
        if "input" in case:
            detail = "Give input or input_json, not both."
            problems.append(FieldError(pointer="/input_json", detail=detail))
        case["input"] = case.pop("input_json")
    if problems:
        return unreadable(number, label, problems, line)
    if not case:
        return ImportItem(report=ItemReport(item=number, label=label, cases=0), line=line)
    report = ItemReport(item=number, label=label, cases=1, imported=tuple(case))
    return ImportItem(report=report, line=line, cases=(case,))


def _cell(name: str, cell: str) -> Any:
    """A cell's value, or the problem with it."""
    if name in JSON_COLUMNS:
        try:
            return msgspec.json.decode(cell)
        except msgspec.DecodeError as exc:
            return FieldError(pointer=f"/{name}", detail=f"Not valid JSON: {exc}")
    if name in NUMBER_COLUMNS:
        try:
            return int(cell.strip())
        except ValueError:
            return FieldError(pointer=f"/{name}", detail=f"Expected a whole number, got {cell!r}.")
    if name == "tags":
        return [tag.strip() for tag in cell.split(",") if tag.strip()]
    return cell


def header_row() -> bytes:
    """The export's header row."""
    return _line(list(COLUMNS))


def export_row(content: TestCaseContent) -> bytes:
    """One case as a CSV row that imports back unchanged."""
    fields = msgspec.to_builtins(content)
    value = fields.get("input")
    cells = {
        "input": value if isinstance(value, str) and value else "",
        "input_json": "" if value is None or (isinstance(value, str) and value) else _json(value),
        "tags": ",".join(fields.get("tags") or ()),
        "min_confidence": str(content.min_confidence),
        "checks_version": str(content.checks_version),
        "evaluation_type": content.evaluation_type,
    }
    for name in JSON_COLUMNS:
        if name != "input_json":  # written with `input` above
            cells[name] = "" if fields.get(name) is None else _json(fields[name])
    for name in ("expected_output", "description"):
        cells[name] = fields.get(name) or ""
    return _line([cells[name] for name in COLUMNS])


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _line(cells: list[str]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerow(cells)
    return out.getvalue().encode()
