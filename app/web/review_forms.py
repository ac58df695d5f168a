"""The review item's label form: Agree / Disagree beside each judged check, an overall verdict,
a note and a corrected reply, read into the service's PostedLabel."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentlasso.domain.review import (
    MAX_CORRECTED_OUTPUT_CHARS,
    MAX_NOTE_CHARS,
    CheckLabel,
    JudgedCheck,
    ReviewLabel,
    Verdict,
)
from agentlasso.services.review import PostedLabel
from agentlasso.web.forms import optional_text, text

VERDICTS: tuple[Verdict, ...] = ("passed", "failed")
# Beside a judge verdict a person agrees or not; beside a check the judge left ungraded they
# say passed or failed themselves.
AGREEMENT = ("agree", "disagree")
PICK_VERDICT = "Choose Passes or Fails, or leave both unchosen."
PICK_AGREEMENT = "Choose Agree or Disagree, or leave both unchosen."


def check_field(index: int) -> str:
    """The form field of the index-th judged check (ids may hold any character; names do not)."""
    return f"check_{index}"


def _check_verdict(judged: JudgedCheck, chosen: str) -> Verdict | None:
    if judged.judge_passed is None:
        return chosen if chosen in VERDICTS else None
    if chosen not in AGREEMENT:
        return None
    return "passed" if judged.judge_passed == (chosen == "agree") else "failed"


def _checks(
    form: Mapping[str, Any], judged: Sequence[JudgedCheck], note: str | None, errors: dict[str, str]
) -> tuple[CheckLabel, ...]:
    labels = []
    for index, check in enumerate(judged):
        chosen = text(form, check_field(index))
        if not chosen:
            continue
        verdict = _check_verdict(check, chosen)
        if verdict is None:
            errors[check_field(index)] = PICK_AGREEMENT
            continue
        # The one note explains the person's verdicts: it goes with each, as the disagreements
        # (and the examples made of them) show it.
        labels.append(CheckLabel(check_id=check.check_id, verdict=verdict, note=note))
    return tuple(labels)


def posted_label(
    form: Mapping[str, Any], judged: Sequence[JudgedCheck], errors: dict[str, str]
) -> PostedLabel:
    """The label the form holds; what is wrong with a field noted in `errors` by its name."""
    verdict = text(form, "verdict")
    if verdict and verdict not in VERDICTS:
        errors["verdict"] = PICK_VERDICT
    note = optional_text(form, "note")
    if note is not None and len(note) > MAX_NOTE_CHARS:
        errors["note"] = f"A note may be {MAX_NOTE_CHARS:,} characters at most."
    corrected = optional_text(form, "corrected_output")
    if corrected is not None and len(corrected) > MAX_CORRECTED_OUTPUT_CHARS:
        errors["corrected_output"] = (
            f"A corrected reply may be {MAX_CORRECTED_OUTPUT_CHARS:,} characters at most."
        )
    return PostedLabel(
        verdict=verdict if verdict in VERDICTS else None,
        checks=_checks(form, judged, note, errors),
        note=note,
        corrected_output=corrected,
    )


def _verdict_word(passed: bool | None) -> str:
    return "" if passed is None else "passed" if passed else "failed"


def form_values(label: ReviewLabel | None, judged: Sequence[JudgedCheck]) -> dict[str, str]:
    """The form filled in with a person's earlier label, so saving again changes it."""
    if label is None:
        return {}
    values = {
        "verdict": _verdict_word(label.verdict),
        "note": label.note or "",
        "corrected_output": label.corrected_output or "",
    }
    given = {check.check_id: check.human_passed for check in label.checks}
    for index, check in enumerate(judged):
        if check.check_id not in given:
            continue
        human = given[check.check_id]
        if check.judge_passed is None:
            values[check_field(index)] = _verdict_word(human)
        else:
            values[check_field(index)] = "agree" if human == check.judge_passed else "disagree"
    return values


def posted_values(form: Mapping[str, Any], judged: Sequence[JudgedCheck]) -> dict[str, str]:
    """The form as it was posted, to show it again beside its errors."""
    names = ["verdict", "note", "corrected_output"]
    names += [check_field(index) for index in range(len(judged))]
    return {name: text(form, name) for name in names}
