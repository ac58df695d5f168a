"""Every setting, declared once: its field, type and default, the variable that gives it and
its bounds, and under it the line docs/reference/settings.md shows (the page is made from
here: `python -m agentlasso.config.reference`)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from agentlasso.config.declaring import Group
from agentlasso.config.parsing import parse_price_setting, parse_url_setting

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/agentlasso"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_JUDGE_PRICES: dict[str, tuple[float, float]] = {
    "claude-haiku-5-5": (0.10, 0.50),
    "claude-sonnet-5-5": (2.0, 10.0),
    "claude-opus-5-5": (4.0, 20.0),
    "claude-haiku-4-5": (1.0, 5.0),
}
# Protobuf's parser stops at 100 nested messages, and a level of value nesting is two of them
# under the five of a span's place in the request: deeper could not be read at all.
MAX_TRACE_VALUE_DEPTH = 32

# Limits, quotas and concurrencies: 0 or less would not limit (a token bucket refilled at 0 a
# second answers "wait minus forever") or would stop everything, so neither is accepted.
Positive = msgspec.Meta(gt=0)
PositiveInt = Annotated[int, Positive]
PositiveFloat = Annotated[float, Positive]

STORAGE = Group("Database and queue", "Where the data and the job queue are kept.")
SERVER = Group("The server", "How the API and the web app present themselves.")
BODIES = Group("Request bodies", "Larger bodies are refused with 413 before they are read whole.")
LIMITS = Group(
    "Rates and quotas", "What one project may ask for, so one tenant cannot starve another."
)
TRACES = Group(
    "Trace ingestion",
    "What reading an OTLP request may cost. The cost is in its values, not its bytes (an array"
    " of 11 million empty values is 32 KB gzipped), so they are counted before they are built.",
)
AGENTS = Group("Agent calls", "How the workers call the agents under test.")
JUDGE = Group("The AI judge", "The model that grades judge checks, and what it may cost.")
GENERATION = Group("Case generation", "Drafting test cases, with the judge's key and model.")
WORKERS = Group("Workers", "What each `agentlasso worker` serves and watches.")
SSO = Group(
    "Single sign-on",
    "OpenID Connect sign-in (`Sign in with SSO` on /login): shown when the issuer, client id and"
    " client secret are all set. See docs/sso.md.",
)


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """What the API and worker processes need to know about their surroundings."""

    database_url: Annotated[str, STORAGE("DATABASE_URL", default=DEFAULT_DATABASE_URL)]
    """PostgreSQL's address, a libpq URL (`sslmode=verify-full` for TLS); `agentlasso dev`
    starts an embedded server when it is unset."""
    redis_url: Annotated[str, STORAGE("REDIS_URL", default=DEFAULT_REDIS_URL)]
    """Redis's address (`rediss://` for TLS), for the queue and the limits every process shares;
    `agentlasso dev` starts an embedded server when it is unset."""
    db_pool_min: Annotated[int, STORAGE("AGENTLASSO_DB_POOL_MIN")] = 2
    """Database connections each process keeps open."""
    db_pool_max: Annotated[int, STORAGE("AGENTLASSO_DB_POOL_MAX")] = 10
    """The most database connections one process opens: size PostgreSQL's `max_connections` by
    it."""
    db_acquire_timeout_s: Annotated[float, STORAGE("AGENTLASSO_DB_ACQUIRE_TIMEOUT_S")] = 5.0
    """How long an API request waits for a database connection before a 503 with Retry-After (a
    worker, with nobody to answer, waits 60 s)."""
    queue_name: Annotated[str, STORAGE("AGENTLASSO_QUEUE")] = "agentlasso:queue"
    """The queue's namespace in Redis: several installs or test runs may share one Redis without
    seeing each other's jobs."""

    secret_key: Annotated[str | None, SERVER("AGENTLASSO_SECRET_KEY")] = None
    """32 bytes, base64 (`agentlasso secret-key` prints one): encrypts agent headers at rest.
    Required outside `agentlasso dev`."""
    public_url: Annotated[
        str | None,
        SERVER(
            "AGENTLASSO_PUBLIC_URL",
            parse=parse_url_setting,
            shape="an http(s) address",
            rule="an origin, maybe with a path prefix; no user name, password, query or fragment",
        ),
    ] = None
    """Where people reach the web app: run answers, CI output and JUnit files link to run pages
    under it. Unset: no links."""
    show_worker_hosts: Annotated[bool, SERVER("AGENTLASSO_SHOW_WORKER_HOSTS")] = False
    """GET /api/v1/workers lists each worker's host and pid: infrastructure, so only for an
    install whose projects are all one team's."""
    demo_agent: Annotated[bool, SERVER("AGENTLASSO_DEMO_AGENT")] = False
    """The API also serves the demo support bot (`agentlasso dev` sets it)."""

    max_body_bytes: Annotated[int, BODIES("AGENTLASSO_MAX_BODY_BYTES")] = 10 * 1024 * 1024
    """A JSON request body, in bytes."""
    max_import_bytes: Annotated[int, BODIES("AGENTLASSO_MAX_IMPORT_BYTES")] = 512 * 1024 * 1024
    """An import's body, in bytes (it is read into a spool before a connection is taken)."""
    max_import_lines: Annotated[int, BODIES("AGENTLASSO_MAX_IMPORT_LINES")] = 1_000_000
    """The lines (test cases) of one import."""

    rate_limit_per_s: Annotated[PositiveFloat, LIMITS("AGENTLASSO_RATE_LIMIT_PER_S")] = 100.0
    """Requests a second one project may make, all its API keys and web sessions together (a
    new key or session buys no more); past it, 429 with Retry-After."""
    rate_limit_burst: Annotated[PositiveInt, LIMITS("AGENTLASSO_RATE_LIMIT_BURST")] = 1_000
    """The requests one project may save up, above its rate."""
    web_rate_limit_per_s: Annotated[PositiveFloat, LIMITS("AGENTLASSO_WEB_RATE_LIMIT_PER_S")] = 20.0
    """Page requests a second one web session may make, within its project's: one browser tab
    cannot spend its project's whole rate."""
    web_rate_limit_burst: Annotated[PositiveInt, LIMITS("AGENTLASSO_WEB_RATE_LIMIT_BURST")] = 200
    """The page requests one web session may save up, above its rate."""
    open_page_rate_limit_per_s: Annotated[
        PositiveFloat, LIMITS("AGENTLASSO_OPEN_PAGE_RATE_LIMIT_PER_S")
    ] = 5.0
    """Requests a second one address may make of the pages open to everyone (the sign-in
    forms, single sign-on's start and callback, setting a password); past it, a 429 page. Every
    browser behind one proxy or NAT shares its address."""
    open_page_rate_limit_burst: Annotated[
        PositiveInt, LIMITS("AGENTLASSO_OPEN_PAGE_RATE_LIMIT_BURST")
    ] = 100
    """The open-page requests one address may save up, above its rate."""
    quota_preview_calls_per_min: Annotated[
        PositiveInt, LIMITS("AGENTLASSO_QUOTA_PREVIEW_CALLS_PER_MIN")
    ] = 120
    """Calls a minute one project's previews and tests may make: Preview, Grade this reply, Send
    test message, an agent's invoke and Test key count 1 each, plus 1 per AI judge check they
    may ask the model about."""
    server_judge_budget_usd_per_day: Annotated[
        PositiveFloat, LIMITS("AGENTLASSO_SERVER_JUDGE_BUDGET_USD_PER_DAY")
    ] = 10.0
    """What the server's Anthropic key may spend a UTC day on one project that has no key of its
    own (judge calls, previews, generations); past it, its judge checks are not graded."""
    quota_api_keys: Annotated[PositiveInt, LIMITS("AGENTLASSO_QUOTA_API_KEYS")] = 100
    """Active API keys one project may hold: creating another is a 409."""
    quota_keys_created_per_hour: Annotated[
        PositiveInt, LIMITS("AGENTLASSO_QUOTA_KEYS_CREATED_PER_HOUR")
    ] = 20
    """API keys one project may create an hour in the web app (`agentlasso keys create` is the
    operator's and bound by neither)."""
    quota_active_runs: Annotated[PositiveInt, LIMITS("AGENTLASSO_QUOTA_ACTIVE_RUNS")] = 50
    """Server-mode runs of one project going on at once."""
    quota_run_concurrency: Annotated[PositiveInt, LIMITS("AGENTLASSO_QUOTA_RUN_CONCURRENCY")] = (
        1_000
    )
    """The most a run's `concurrency` may be."""
    quota_agent_host_calls_per_min: Annotated[
        PositiveInt, LIMITS("AGENTLASSO_QUOTA_AGENT_HOST_CALLS_PER_MIN")
    ] = 1_200_000
    """Agent calls a minute from one project to one host, across every worker: paced, not
    refused."""
    quota_dataset_cases: Annotated[PositiveInt, LIMITS("AGENTLASSO_QUOTA_DATASET_CASES")] = (
        1_000_000
    )
    """Test cases in one dataset."""
    quota_generations_per_min: Annotated[
        PositiveInt, LIMITS("AGENTLASSO_QUOTA_GENERATIONS_PER_MIN")
    ] = 10
    """Case generations (and regenerated drafts) a minute of one project: each is many model
    calls, on the project's key or the server's."""
    project_share: Annotated[
        float, msgspec.Meta(gt=0, le=1), LIMITS("AGENTLASSO_PROJECT_SHARE")
    ] = 0.8
    """The share of a worker's agent-call slots, and of the judge's slots, one project may hold
    (1: no cap): a hanging agent or a judge backlog leaves the rest to everyone else."""
    max_waiters: Annotated[PositiveInt, LIMITS("AGENTLASSO_MAX_WAITERS")] = 5_000
    """Long-polls, event streams and CI batches one API process holds waiting on runs: past it a
    new one is a 503 with Retry-After."""
    max_waiters_per_project: Annotated[
        PositiveInt, LIMITS("AGENTLASSO_MAX_WAITERS_PER_PROJECT")
    ] = 1_000
    """The waiters one API process holds for one project."""
    grading_budget_s: Annotated[float, LIMITS("AGENTLASSO_GRADING_BUDGET_S")] = 5.0
    """The time grading may take for one request or chunk: regular expressions not run by then
    are not graded, saying so."""

    trace_max_body_bytes: Annotated[int, TRACES("AGENTLASSO_TRACE_MAX_BODY_BYTES")] = (
        32 * 1024 * 1024
    )
    """An OTLP protobuf request once decompressed, in bytes."""
    trace_max_json_body_bytes: Annotated[
        PositiveInt, TRACES("AGENTLASSO_TRACE_MAX_JSON_BODY_BYTES")
    ] = 8 * 1024 * 1024
    """An OTLP/JSON request once decompressed, in bytes."""
    trace_max_spans_per_request: Annotated[
        int, TRACES("AGENTLASSO_TRACE_MAX_SPANS_PER_REQUEST")
    ] = 10_000
    """Spans in one OTLP request."""
    trace_max_values_per_request: Annotated[
        PositiveInt, TRACES("AGENTLASSO_TRACE_MAX_VALUES_PER_REQUEST")
    ] = 100_000
    """Values in one OTLP request: an attribute, each element of an array or kvlist value and
    each event count one."""
    trace_max_values_per_attribute: Annotated[
        PositiveInt, TRACES("AGENTLASSO_TRACE_MAX_VALUES_PER_ATTRIBUTE")
    ] = 10_000
    """Values in one attribute."""
    trace_max_attributes_per_span: Annotated[
        PositiveInt, TRACES("AGENTLASSO_TRACE_MAX_ATTRIBUTES_PER_SPAN")
    ] = 128
    """Attributes of one span, event, link or resource (OpenTelemetry's own default is 128)."""
    trace_max_value_depth: Annotated[
        int,
        msgspec.Meta(gt=0, le=MAX_TRACE_VALUE_DEPTH),
        TRACES("AGENTLASSO_TRACE_MAX_VALUE_DEPTH"),
    ] = 16
    """How deep array and kvlist values may nest in each other."""
    trace_max_summary_chars: Annotated[
        PositiveInt, TRACES("AGENTLASSO_TRACE_MAX_SUMMARY_CHARS")
    ] = 10_000
    """The characters a trace's summary keeps of each text (input, reply, error, a message, a
    tool call's arguments or result), saying where it cuts."""
    trace_max_summary_items: Annotated[
        PositiveInt, TRACES("AGENTLASSO_TRACE_MAX_SUMMARY_ITEMS")
    ] = 100
    """The messages and tool calls a trace's summary keeps, saying where it cuts."""
    trace_settle_s: Annotated[PositiveFloat, TRACES("AGENTLASSO_TRACE_SETTLE_S")] = 30.0
    """How long a trace must go without a new span before trace rules grade it (a span that
    arrives later grades it again)."""

    allow_private_agents: Annotated[bool, AGENTS("AGENTLASSO_ALLOW_PRIVATE_AGENTS")] = False
    """Agents on loopback, private or link-local addresses may be called (`agentlasso dev`
    allows them)."""
    agent_timeout_s: Annotated[float, AGENTS("AGENTLASSO_AGENT_TIMEOUT_S")] = 30.0
    """An agent call's timeout (an agent's own `timeout_s` wins)."""
    agent_max_body_bytes: Annotated[int, AGENTS("AGENTLASSO_AGENT_MAX_BODY_BYTES")] = 1024 * 1024
    """An agent's answer body, in bytes."""
    agent_max_header_bytes: Annotated[PositiveInt, AGENTS("AGENTLASSO_AGENT_MAX_HEADER_BYTES")] = (
        64 * 1024
    )
    """An agent's answer outside its body (status line, headers, trailers), in bytes: past it
    the call fails at once, unretried."""
    agent_max_headers: Annotated[PositiveInt, AGENTS("AGENTLASSO_AGENT_MAX_HEADERS")] = 100
    """Header fields of an agent's answer: past it the call fails at once, unretried."""
    agent_max_attempts: Annotated[PositiveInt, AGENTS("AGENTLASSO_AGENT_MAX_ATTEMPTS")] = 3
    """Attempts at one agent call."""
    agent_retry_after_cap_s: Annotated[float, AGENTS("AGENTLASSO_AGENT_RETRY_AFTER_CAP_S")] = 10.0
    """The longest an agent's `retry-after` is honoured."""
    slot_lease_s: Annotated[PositiveFloat, AGENTS("AGENTLASSO_SLOT_LEASE_S")] = 30.0
    """A concurrency slot (an agent's max_concurrency, the judge's) is leased this long and
    renewed while its call runs: a dead worker's slot comes free after one lease at most."""

    anthropic_api_key: Annotated[str | None, JUDGE("ANTHROPIC_API_KEY")] = None
    """The server's key for the judge. Unset: judge checks of projects without a key of their
    own are not graded, and no call is made."""
    anthropic_base_url: Annotated[str | None, JUDGE("ANTHROPIC_BASE_URL")] = None
    """Another endpoint for the model's API (the tests use a fake)."""
    judge_model: Annotated[str, JUDGE("AGENTLASSO_JUDGE_MODEL")] = "claude-sonnet-5-5"
    """The model that judges: it must be in the price table."""
    judge_timeout_s: Annotated[float, JUDGE("AGENTLASSO_JUDGE_TIMEOUT_S")] = 60.0
    """One judge call's timeout, per attempt."""
    judge_max_attempts: Annotated[PositiveInt, JUDGE("AGENTLASSO_JUDGE_MAX_ATTEMPTS")] = 3
    """Attempts at one judge call."""
    judge_retry_after_cap_s: Annotated[float, JUDGE("AGENTLASSO_JUDGE_RETRY_AFTER_CAP_S")] = 30.0
    """The longest the model API's `retry-after` is honoured."""
    judge_concurrency: Annotated[PositiveInt, JUDGE("AGENTLASSO_JUDGE_CONCURRENCY")] = 20
    """Judge calls in flight across every worker process together."""
    judge_requests_per_minute: Annotated[int, JUDGE("AGENTLASSO_JUDGE_RPM")] = 0
    """Judge requests a minute across every worker process (0: no pacing). A little under the
    API's own limit, the fleet is paced rather than answered 429."""
    judge_repeats: Annotated[int, JUDGE("AGENTLASSO_JUDGE_REPEATS")] = 3
    """How many times a SCORE near its floor is judged; the median counts."""
    judge_repeat_margin: Annotated[int, JUDGE("AGENTLASSO_JUDGE_REPEAT_MARGIN")] = 10
    """How near its floor, in points, a SCORE is judged again."""
    judge_max_input_chars: Annotated[int, JUDGE("AGENTLASSO_JUDGE_MAX_INPUT_CHARS")] = 20_000
    """The characters of each of the reply, the case's input, the data context and the expected
    output the judge is shown: it bounds what a verdict costs. Cuts are stated."""
    judge_wait_s: Annotated[float, JUDGE("AGENTLASSO_JUDGE_WAIT_S")] = 25.0
    """How long POST /eval-run-results waits for verdicts before answering 202."""
    judge_forced_tool_models: Annotated[
        tuple[str, ...], JUDGE("AGENTLASSO_JUDGE_FORCED_TOOL_MODELS")
    ] = ("claude-haiku-4-5",)
    """Models judged through a forced tool call instead of structured output."""
    judge_prices: Annotated[
        dict[str, tuple[float, float]],
        JUDGE(
            "AGENTLASSO_JUDGE_PRICES",
            parse=parse_price_setting,
            shape='JSON: `{"model": [input, output]}`',
        ),
    ] = msgspec.field(default_factory=lambda: dict(DEFAULT_JUDGE_PRICES))
    """Models' prices in US dollars per million tokens, input and output, added to the built-in
    table (late 2026 list prices)."""

    generation_deadline_s: Annotated[float, GENERATION("AGENTLASSO_GENERATION_DEADLINE_S")] = 120.0
    """The whole generation request's deadline: the drafts valid by then are kept."""
    generation_concurrency: Annotated[
        PositiveInt, GENERATION("AGENTLASSO_GENERATION_CONCURRENCY")
    ] = 4
    """Model calls in flight for one generation request."""
    generation_max_tokens: Annotated[int, GENERATION("AGENTLASSO_GENERATION_MAX_TOKENS")] = 4096
    """The tokens one answer (a plan or a case) may take."""

    metrics_port: Annotated[int | None, WORKERS("AGENTLASSO_METRICS_PORT")] = None
    """A worker serves GET /metrics and GET /live on this port (`agentlasso worker
    --metrics-port` wins). Unset: it serves neither."""
    metrics_host: Annotated[str, WORKERS("AGENTLASSO_METRICS_HOST")] = "0.0.0.0"  # noqa: S104
    """The interface the worker's port listens on: every one, so Prometheus and the kubelet
    reach it from outside the pod."""
    chunk_stale_s: Annotated[float, WORKERS("AGENTLASSO_CHUNK_STALE_S")] = 20.0
    """A chunk whose worker has not beaten for this long is taken to be dead and redone
    elsewhere."""
    alert_evaluate_s: Annotated[PositiveFloat, WORKERS("AGENTLASSO_ALERT_EVALUATE_S")] = 30.0
    """How often each alert's metric is read over its window, and its state decided."""

    oidc_issuer: Annotated[str | None, SSO("AGENTLASSO_OIDC_ISSUER")] = None
    """The identity provider's issuer URL; its `/.well-known/openid-configuration` is read."""
    oidc_client_id: Annotated[str | None, SSO("AGENTLASSO_OIDC_CLIENT_ID")] = None
    """The client id the identity provider gave AgentLasso."""
    oidc_client_secret: Annotated[str | None, SSO("AGENTLASSO_OIDC_CLIENT_SECRET")] = None
    """The client's secret (sent to the token endpoint only, never logged)."""
    oidc_allowed_domains: Annotated[tuple[str, ...], SSO("AGENTLASSO_OIDC_ALLOWED_DOMAINS")] = ()
    """Email domains whose verified users may join on their first SSO sign-in, as viewers."""
    oidc_organisation: Annotated[str | None, SSO("AGENTLASSO_OIDC_ORGANISATION")] = None
    """The organisation new SSO users join; unset, the only one there is (refused when there
    are several)."""
    oidc_redirect_url: Annotated[str | None, SSO("AGENTLASSO_OIDC_REDIRECT_URL")] = None
    """The redirect URI registered at the identity provider; unset, AGENTLASSO_PUBLIC_URL's
    `/login/sso/callback` (or the request's own origin when that is unset too)."""


LogFormat = Literal["text", "json"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
LOGS = Group("Logs", "How every server command logs; read first, before any other setting.")
CLIENT = Group("The CI commands", "What `agentlasso ci` and `agentlasso run` read where they run.")


class LogSettings(msgspec.Struct, frozen=True, kw_only=True):
    """How a server command logs: read before the rest, so a setting refused is logged so."""

    log_format: Annotated[LogFormat, LOGS("AGENTLASSO_LOG_FORMAT")] = "text"
    """How log lines are written: `text` for people, `json` (one JSON object a line on stderr)
    for a log pipeline; `agentlasso dev` always logs text."""
    log_level: Annotated[LogLevel, LOGS("AGENTLASSO_LOG_LEVEL")] = "INFO"
    """The least level logged."""


class ClientSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What the CI commands need: where the platform is, its key, and where CI wants a summary."""

    url: Annotated[str, CLIENT("AGENTLASSO_URL")] = "http://127.0.0.1:8000"
    """The platform's address."""
    api_key: Annotated[str | None, CLIENT("AGENTLASSO_API_KEY")] = None
    """A project API key; without one the commands stop, saying so."""
    step_summary: Annotated[str | None, CLIENT("GITHUB_STEP_SUMMARY")] = None
    """A file the gate's Markdown summary is added to (GitHub Actions sets it)."""


# Every Struct read from the environment, in the order the reference page lists them.
DECLARED: tuple[type[msgspec.Struct], ...] = (Settings, LogSettings, ClientSettings)
