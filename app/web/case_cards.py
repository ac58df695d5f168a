"""A case's card in a run: what it asked, what the agent did, and every check's verdict beside
it, with the text checks' matches marked in the reply and the reply diffed against the
expected output."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get
from litestar.params import FromPath, FromQuery

from agentlasso.domain.case_results import StoredResult
from agentlasso.domain.checks import PRODUCT_NAMES
from agentlasso.domain.grades import Observation
from agentlasso.domain.judging import JudgeRecord
from agentlasso.domain.test_cases import TestCaseContent
from agentlasso.grading.plan import expected_output, plan_case
from agentlasso.http.auth import PlatformDep
from agentlasso.http.pagination import parse_id
from agentlasso.services import case_cards as card_service
from agentlasso.web.agent_reply import observation_of, what_the_agent_did
from agentlasso.web.agent_steps import agent_steps
from agentlasso.web.conversation_views import chat, turn_of
from agentlasso.web.highlight import checks_that_matched, marked_reply
from agentlasso.web.rendering import page
from agentlasso.web.sessions import session_of
from agentlasso.web.word_diff import word_diff


class CaseCardPages(Controller):
    """One (test case, trial) result of a run."""

    @get("/runs/{run_id:str}/cases/{test_case_id:str}", name="case_card")
    async def case_card(
        self,
        request: Request[Any, Any, Any],
        platform: PlatformDep,
        run_id: FromPath[str],
        test_case_id: FromPath[str],
        trial: FromQuery[int] = 1,
    ) -> Response[Any]:
        """One case of a run: what it asked, what the agent did, and every check's verdict
        beside it."""
        card = await card_service.case_card(
            platform, session_of(request).project_id, parse_id(run_id, "run"),
            parse_id(test_case_id, "test case"), trial,
        )  # fmt: skip
        return page(request, "case_card.html", **card_shown(card))


def card_shown(card: card_service.CaseCard) -> dict[str, Any]:
    """What the card's template shows of one result (the review item page shows the same)."""
    checks = checks_shown(card.result)
    result = card.result
    shown = {"card": card, "run": card.run, "result": result, "graded": card.graded,
             "checks": checks, "agent_steps": agent_steps(card.agent_trace.spans)
             if card.agent_trace else []}  # fmt: skip
    if result.turns is not None:
        conversation = chat(result.turns, checks, result.ended_by, result.not_played_reason)
        return {**shown, "conversation": conversation}
    observation = observation_of(result)
    return {**shown, "conversation": None,
            **reply_shown(observation, card.graded.content, result)}  # fmt: skip


def reply_shown(
    observation: Observation, content: TestCaseContent, result: StoredResult
) -> dict[str, Any]:
    """What the agent did, its reply with the text checks' matches marked, and the expected
    output diffed against it (`diff` None: nothing to diff, or too long to)."""
    did = what_the_agent_did(observation)
    reply, expected = observation.actual_output, expected_output(content)
    marks = None
    if reply is not None:
        matched = checks_that_matched(plan_case(content).checks, result.result.check_results)
        if matched:
            marks = marked_reply(reply, matched)
            did["reply"] = marks.html  # Markup: escaped by marked_reply, only <mark> added
    diff = None
    if expected is not None and reply is not None:
        diff = word_diff(expected, reply)
    compared = expected is not None and reply is not None
    return {"did": did, "marks": marks, "compared": compared, "diff": diff}


def checks_shown(result: StoredResult) -> list[dict[str, Any]]:
    """Each check's result with its product name, and what the AI judge's record says."""
    records = {record.check_id: record for record in result.judge_records or ()}
    return [
        {
            "name": PRODUCT_NAMES.get(check.type, check.type),
            "check": check,
            "judge": judge_facts(records[check.id]) if check.id in records else [],
            "turn": turn_of(check),
        }
        for check in result.result.check_results
    ]


def judge_facts(record: JudgeRecord) -> list[str]:
    """The judge's record in short phrases: model, samples, flags, truncation, tokens."""
    facts = [f"model {record.model}"] if record.model else []
    if len(record.samples) > 1:
        facts.append("samples " + ", ".join(f"{sample:.2f}" for sample in record.samples))
    if record.flaky:
        facts.append("flaky: the samples disagree")
    if record.cached:
        facts.append("answered from the cache")
    if record.truncated:
        facts.append("the judge was shown only the start of " + "; ".join(record.truncated))
    if record.usage.input_tokens or record.usage.output_tokens:
        facts.append(_tokens(record))
    return facts


def _tokens(record: JudgeRecord) -> str:
    usage = record.usage
    read = usage.cache_read_input_tokens
    return f"{usage.input_tokens:,} tokens in, {usage.output_tokens:,} out" + (
        f", {read:,} read from the prompt cache" if read else ""
    )
