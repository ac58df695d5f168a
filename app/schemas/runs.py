"""Runs on the wire: starting one, and every answer about one."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from agentlasso.domain import runs as domain
from agentlasso.domain.checks import Check
from agentlasso.domain.conversations import Conversation
from agentlasso.domain.test_cases import MAX_TAGS, CaseInput, EvaluationType, Tag
from agentlasso.schemas.agents import Tools

RunStatus = domain.RunStatus
WebUrl = Annotated[
    str | None,
    msgspec.Meta(
        description="The run's page in the web app; null when the server's public URL "
        "(AGENTLASSO_PUBLIC_URL) is not set."
    ),
]


class RunCreate(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Start a run of a dataset. Without agent_id the client calls its own agent (CI mode)."""

    dataset_id: str
    pass_threshold: Annotated[float, msgspec.Meta(ge=0, le=1)] = 1.0
    agent_id: str | None = None
    trials: Annotated[int, msgspec.Meta(ge=1, le=10)] = 1
    concurrency: Annotated[int, msgspec.Meta(ge=1, le=10_000)] | None = None
    labels: dict[str, Annotated[str, msgspec.Meta(max_length=500)]] | None = None
    # false: ask the AI judge afresh even for a request it has answered before.
    judge_cache: bool = True
    # "threshold": the pass rate decides; "no_new_failures": only a case that passed in the
    # baseline and fails now fails the gate.
    gate: domain.RunGate = "threshold"
    # A completed run of the same dataset; without it the newest completed run whose gate
    # passed, else the newest completed one, else none.
    baseline_run_id: str | None = None
    # Only the cases with at least one of these tags run (an empty list: every case).
    tags: Annotated[list[Tag], msgspec.Meta(max_length=MAX_TAGS)] | None = None
    # A version of the dataset, by its id or name: its frozen revisions run, not the current.
    dataset_version: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    # CI mode: your agent's tools as it declares them ({"name", "input_schema"}, or OpenAI's
    # {"type": "function", "function": {"name", "parameters"}}), for tool_args_valid checks.
    tools: Tools | None = None


class RunTestCase(msgspec.Struct, kw_only=True):
    """A case of a CI-mode run: what to send the agent and exactly what will be graded."""

    test_case_id: str
    # A single-turn case's input; null for a conversation, whose turns `conversation` holds.
    input: CaseInput | None
    evaluation_criteria_json: dict[str, Any] | None
    checks_version: int
    checks: tuple[Check, ...]
    expected_output: str | None
    evaluation_type: EvaluationType
    min_confidence: int
    data_context: dict[str, Any] | None
    description: str | None
    conversation: Conversation | msgspec.UnsetType = msgspec.UNSET
    # Answers for the agent's tools, to send it with each call (section 14); absent: none.
    tool_fixtures: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


class Counts(msgspec.Struct, kw_only=True):
    """A run's progress."""

    total: int
    done: int
    graded: int
    passed: int
    failed: int
    not_graded: int
    errored: int


class JudgeUsage(msgspec.Struct, kw_only=True):
    """What the AI judge did for a run, and what it cost (from the server's price table)."""

    calls: int
    cached: int
    pending: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float
    stopped: str | None


class RunGate(msgspec.Struct, kw_only=True):
    """What every answer about a run says: its status, counts and CI gate."""

    run_id: str
    status: RunStatus
    pass_rate: float | None
    pass_threshold: float
    ci_pass: bool
    ci_fail_reason: str | None
    counts: Counts
    judge: JudgeUsage
    web_url: WebUrl
    gate: domain.RunGate
    # The run this one is compared with, fixed when it was created; null when none.
    baseline_run_id: str | None
    # Cases that passed in the baseline and do not pass now; null until the run completes.
    new_failures: int | None
    # Counted by case once the run completes (null before): graded cases with a passing trial
    # (pass@k), with every trial passing (pass^k), and cases whose trials disagree.
    pass_at_k_rate: float | None
    pass_all_k_rate: float | None
    flaky_count: int | None
    # Each llm_judge criterion the run graded that people have labelled fewer than 20 times, or
    # whose kappa with them is below 0.6, in words; decided when the run completes.
    judge_warnings: list[str] = []


class Run(RunGate, kw_only=True):
    """A run's status and gate, with what it runs."""

    dataset_id: str
    mode: Literal["ci", "server"]
    agent_id: str | None
    concurrency: int | None
    trials: int
    labels: dict[str, str] | None
    # The tags the run was limited to (null: every case), and the version it ran (null: the
    # cases' current revisions).
    tags: list[str] | None
    dataset_version_id: str | None
    dataset_version: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class CreatedServerRun(Run, kw_only=True):
    """The answer to starting a server-mode run: queued, the work not yet begun."""

    total: int


class CreatedCiRun(msgspec.Struct, kw_only=True):
    """The answer to starting a CI-mode run."""

    run_id: str
    status: RunStatus
    pass_threshold: float
    total: int
    web_url: WebUrl
    gate: domain.RunGate
    baseline_run_id: str | None
    tags: list[str] | None
    dataset_version_id: str | None
    dataset_version: str | None
    test_cases: list[RunTestCase]


class RunPage(msgspec.Struct, kw_only=True):
    """A page of runs, newest first."""

    items: list[Run]
    next_cursor: str | None
