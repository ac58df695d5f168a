"""The import reads promptfoo files as promptfoo does, and its checks grade as promptfoo's.

promptfoo runs its asserts on a set of replies (its `echo` provider answers with the prompt,
here the reply itself, offline); our grading runs the checks the import makes of the same
asserts on the same replies. They must agree, except where the docs say ours is stricter.
And YAML values read by our loader are those promptfoo's js-yaml (with promptfoo's schema)
reads from the same text.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest

from agentlasso.domain.checks import Check
from agentlasso.domain.grades import Observation
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading import grade_case
from agentlasso.importers.promptfoo_asserts import Mapped, map_assert
from agentlasso.importers.yaml_documents import YamlProblem, load_yaml
from tests.support import promptfoo
from tests.support.npm_packages import node_bin

REPLIES = [
    "Your refund is on its way",
    "REFUND issued for order 1234",
    '{"order": "1234", "status": "shipped"}',
    '{ "order" : "1234" ,\n  "status": "pending" }',
    'Here it is: {"order": "1234"}',
    "ÉCOLE: the answer",
    "  padded answer  ",
    "Yes",
    "[1, 2, 3]",
    "Total: $5.00 (USD)",
    "Die Straße ist lang",
]
ORDER_SCHEMA = {
    "type": "object",
    "required": ["status"],
    "properties": {"status": {"enum": ["shipped"]}},
}
ASSERTS: list[dict[str, Any]] = [
    {"type": "contains", "value": "Refund"},
    {"type": "contains", "value": "refund"},
    {"type": "contains", "value": "1234"},
    {"type": "icontains", "value": "REFUND"},
    {"type": "icontains", "value": "école"},
    {"type": "not-contains", "value": "REFUND"},
    {"type": "not-icontains", "value": "shipped"},
    {"type": "regex", "value": "order \\d+"},
    {"type": "regex", "value": "^\\{"},
    {"type": "regex", "value": "[A-Z]{4,}"},
    {"type": "not-regex", "value": "[A-Z]{4,}"},
    {"type": "equals", "value": "Yes"},
    {"type": "equals", "value": "yes"},
    {"type": "equals", "value": "  padded answer  "},
    {"type": "equals", "value": "padded answer"},
    {"type": "equals", "value": {"order": "1234", "status": "shipped"}},
    {"type": "equals", "value": [1, 2, 3]},
    {"type": "is-json"},
    {"type": "is-json", "value": ORDER_SCHEMA},
    {"type": "contains-json"},
    {"type": "contains-json", "value": ORDER_SCHEMA},
    {"type": "contains", "value": "$5.00 (USD)"},
    {"type": "contains", "value": "$5.00 (usd)"},
    {"type": "not-contains", "value": "(USD)"},
    {"type": "icontains", "value": "STRASSE"},
]
# Ours fails replies with prose around the JSON, which promptfoo finds anywhere (stricter).
STRICTER = {"contains-json"}
# Where ours differs as the docs say: plain text folds case by Unicode (ß is ss), where
# promptfoo's icontains lowercases (ß stays ß).
DIFFERENCES = {("Die Straße ist lang", len(ASSERTS) - 1): (False, True)}
_checks = msgspec.json.Decoder(tuple[Check, ...])


@pytest.fixture(scope="module")
def promptfoo_verdicts(promptfoo_installed: Path, tmp_path_factory: pytest.TempPathFactory
                       ) -> list[list[bool]]:  # fmt: skip
    """promptfoo's pass or fail of each assert (columns) on each reply (rows)."""
    folder = tmp_path_factory.mktemp("agreement")
    config = {
        "prompts": ["{{reply}}"],
        "providers": ["echo"],
        "tests": [{"vars": {"reply": reply}, "assert": ASSERTS} for reply in REPLIES],
    }
    (folder / "config.json").write_text(json.dumps(config))
    command = [str(promptfoo_installed), "eval", "-c", "config.json", "-o", "out.json",
               "--no-cache", "--no-table", "--no-write", "--no-progress-bar"]  # fmt: skip
    done = subprocess.run(
        command, cwd=folder, env=promptfoo.environment(), capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert (folder / "out.json").is_file(), done.stdout + done.stderr
    results = json.loads((folder / "out.json").read_text())["results"]["results"]
    by_reply = {result["response"]["output"]: result for result in results}
    return [
        [part["pass"] for part in by_reply[reply]["gradingResult"]["componentResults"]]
        for reply in REPLIES
    ]


def ours(assertion: dict[str, Any], reply: str) -> bool:
    """Whether the checks the import makes of the assert all pass on the reply."""
    mapped = map_assert(assertion, {})
    assert isinstance(mapped, Mapped), mapped
    wire = [{"id": f"c{index}", **check} for index, check in enumerate(mapped.checks)]
    content = TestCaseContent(input="q", checks=_checks.decode(msgspec.json.encode(wire)))
    result = grade_case(content, Observation(actual_output=reply))
    return all(check.passed for check in result.check_results)


def test_the_imported_checks_agree_with_promptfoo_on_every_reply(
    promptfoo_verdicts: list[list[bool]],
) -> None:
    disagreements = []
    for reply, verdicts in zip(REPLIES, promptfoo_verdicts, strict=True):
        for column, (assertion, theirs) in enumerate(zip(ASSERTS, verdicts, strict=True)):
            mine = ours(assertion, reply)
            stricter_only = assertion["type"] in STRICTER and theirs and not mine
            if (reply, column) in DIFFERENCES:
                assert (theirs, mine) == DIFFERENCES[reply, column]
            elif mine != theirs and not stricter_only:
                disagreements.append((reply, assertion, f"promptfoo {theirs}, ours {mine}"))
    assert disagreements == []


def test_contains_json_is_stricter_only_where_the_reply_has_prose_around_it(
    promptfoo_verdicts: list[list[bool]],
) -> None:
    column = ASSERTS.index({"type": "contains-json"})
    differ = [
        reply
        for reply, verdicts in zip(REPLIES, promptfoo_verdicts, strict=True)
        if verdicts[column] != ours(ASSERTS[column], reply)
    ]
    assert differ == ['Here it is: {"order": "1234"}']


YAML_SNIPPETS = [
    "a: yes\nb: no\nc: on\nd: off\ne: y",
    "a: 012\nb: 0o17\nc: 0x1F\nd: -12\ne: +12\nf: 1_000\ng: 1:30",
    "a: 1e3\nb: 1.\nc: .5\nd: -0.25\ne: 6.02e+23",
    "a: ~\nb: null\nc: Null\nd: NULL\ne:\nf: TRUE\ng: False",
    "a: 'it''s'\nb: \"tab\\there\\u00e9\"\nc: |\n  block\n  text\nd: >\n  folded\n  text\n",
    "base: &b {x: 1, y: 2}\nm: {<<: *b, y: 3}\nl: [*b, *b]",
    "1: one\ntrue: yes\nnull: nothing\n1.5: x",
    "a: !!str 12\nb: !!int '7'\nc: !!float 1\nd: [1, '2', three, {k: v}]",
    "tests:\n  - vars: {q: 'a: b', n: 3}\n    assert: [{type: equals, value: 3}]",
    "a: 1\na: 2",
]


def js_yaml(snippets: list[str], promptfoo_installed: Path) -> list[Any]:
    """Each snippet as promptfoo's js-yaml (its load schema) reads it: a value, or an error."""
    js_yaml_dir = promptfoo.cache_dir() / "node_modules" / "js-yaml"
    script = f"""
    const yaml = require({json.dumps(str(js_yaml_dir))});
    const schema = yaml.CORE_SCHEMA.withTags(yaml.mergeTag, yaml.binaryTag, yaml.timestampTag);
    const out = JSON.parse(require("fs").readFileSync(0, "utf8")).map((text) => {{
      try {{ return {{value: yaml.load(text, {{schema}})}}; }}
      catch (e) {{ return {{error: String(e.message).split("\\n")[0]}}; }}
    }});
    process.stdout.write(JSON.stringify(out));
    """
    node = node_bin() / "node"
    done = subprocess.run(
        [str(node), "-e", script], input=json.dumps(snippets), capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    return list(json.loads(done.stdout))


def test_yaml_reads_as_promptfoo_reads_it(promptfoo_installed: Path) -> None:
    theirs = js_yaml(YAML_SNIPPETS, promptfoo_installed)
    for text, their in zip(YAML_SNIPPETS, theirs, strict=True):
        try:
            mine: dict[str, Any] = {"value": json.loads(json.dumps(load_yaml(text)))}
        except YamlProblem as exc:
            mine = {"error": exc.detail}
        assert ("error" in mine) == ("error" in their), (text, mine, their)
        if "value" in mine:
            assert mine["value"] == their["value"], text
