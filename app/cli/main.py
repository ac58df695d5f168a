"""The `agentlasso` command line: the server commands, and the CI gates `ci` and `run`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agentlasso.cli.server import add_server_commands
from agentlasso.cli.users import add_user_commands
from agentlasso.client import MAX_RESULTS_PER_POST
from agentlasso.config import load_client_settings

GATE_COMMAND_HELP = (
    "Reads AGENTLASSO_URL (default http://127.0.0.1:8000) and AGENTLASSO_API_KEY. Exits 0 when"
    " the gate passes, 1 when it fails, 2 when AgentLasso cannot be reached or the run failed."
)
AUTO_BASELINE = "auto"
GATES = ("threshold", "no_new_failures")


def _ci(args: argparse.Namespace) -> int:
    from agentlasso.cli.ci import CiOptions, run_ci

    api_key = _api_key()
    if not api_key:
        return 2
    options = CiOptions(
        base_url=_base_url(),
        api_key=api_key,
        dataset_id=args.dataset,
        agent_url=args.agent_url,
        agent_cmd=args.agent_cmd,
        threshold=args.threshold,
        concurrency=args.concurrency,
        batch_size=args.batch_size,
        timeout_s=args.timeout,
        junit=Path(args.junit) if args.junit else None,
        tools=args.tools,
        agent_protocol=args.agent_protocol,
        agent_model=args.agent_model,
        **_compare_options(args),
    )
    return run_ci(options)


def _run(args: argparse.Namespace) -> int:
    from agentlasso.cli.run import RunOptions, run_server

    if args.comment_file and not args.wait:
        print(
            "error: --comment-file needs --wait (the comment is of the ended run)", file=sys.stderr
        )
        return 2
    api_key = _api_key()
    if not api_key:
        return 2
    options = RunOptions(
        base_url=_base_url(),
        api_key=api_key,
        dataset_id=args.dataset,
        agent_id=args.agent,
        wait=args.wait,
        trials=args.trials,
        threshold=args.threshold,
        concurrency=args.concurrency,
        junit=Path(args.junit) if args.junit else None,
        **_compare_options(args),
    )
    return run_server(options)


def _compare_options(args: argparse.Namespace) -> dict[str, Any]:
    """The cases (tags, version), the gate, the baseline (None: the server picks it) and the
    comment file."""
    return {
        "tags": tuple(args.tags or ()),
        "dataset_version": args.dataset_version,
        "gate": args.gate,
        "baseline_run_id": None if args.baseline == AUTO_BASELINE else args.baseline,
        "comment_file": Path(args.comment_file) if args.comment_file else None,
    }


def _api_key() -> str | None:
    key = load_client_settings().api_key
    if not key:
        print("error: set AGENTLASSO_API_KEY to a project API key", file=sys.stderr)
    return key


def _base_url() -> str:
    return load_client_settings().url


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _batch_size(text: str) -> int:
    value = _positive(text)
    if value > MAX_RESULTS_PER_POST:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_RESULTS_PER_POST:,}")
    return value


def _tools_file(path: str) -> list[dict[str, Any]]:
    """The agent's declared tools, read from a JSON file holding a list of them."""
    try:
        tools = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {exc.strerror}") from exc
    except (UnicodeDecodeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
        raise argparse.ArgumentTypeError(f"{path} must hold a JSON list of tool objects")
    return tools


def _gate_flags() -> argparse.ArgumentParser:
    """The flags `ci` and `run` share: which dataset, the gate and its baseline, the files."""
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument("--dataset", required=True, help="the dataset id")
    shared.add_argument(
        "--tag",
        dest="tags",
        action="append",
        metavar="TAG",
        help="run only the cases with this tag (repeat it: cases with any of the tags)",
    )
    shared.add_argument(
        "--dataset-version",
        metavar="NAME",
        help="run this version of the dataset (its name or id): the revisions it froze",
    )
    shared.add_argument("--threshold", type=_fraction, help="pass threshold, 0 to 1 (default 1.0)")
    shared.add_argument(
        "--gate",
        choices=GATES,
        default="threshold",
        help="threshold: the pass rate decides (default); no_new_failures: only a case that "
        "passed in the baseline and fails now fails the gate",
    )
    shared.add_argument(
        "--baseline",
        default=AUTO_BASELINE,
        metavar="RUN_ID|auto",
        help="the run to compare with: a completed run of the dataset, or auto (default: the "
        "newest completed run whose gate passed, else the newest completed run)",
    )
    shared.add_argument("--junit", help="write JUnit XML here")
    shared.add_argument(
        "--comment-file",
        metavar="FILE",
        help="write a Markdown summary for a pull-request comment here (whatever the verdict)",
    )
    return shared


def _add_ci(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ci = commands.add_parser(
        "ci",
        parents=[_gate_flags()],
        help="run a dataset as a CI gate, calling your agent from here",
        description=GATE_COMMAND_HELP,
    )
    agent = ci.add_mutually_exclusive_group(required=True)
    agent.add_argument("--agent-url", help="POST each case to this URL")
    agent.add_argument(
        "--agent-cmd", help="run this command per case: request on stdin, answer on stdout"
    )
    ci.add_argument(
        "--agent-protocol",
        choices=("agentlasso", "openai_chat", "a2a"),
        default="agentlasso",
        help="how --agent-url is spoken to: AgentLasso's JSON (the default), an "
        "OpenAI-compatible chat-completions URL, or an A2A agent (its card or base URL)",
    )
    ci.add_argument("--agent-model", help="the model an openai_chat endpoint is asked for")
    ci.add_argument("--concurrency", type=_positive, default=8, help="agent calls at once")
    ci.add_argument(
        "--batch-size",
        type=_batch_size,
        default=500,
        help=f"results per POST (at most {MAX_RESULTS_PER_POST:,})",
    )
    ci.add_argument("--timeout", type=float, default=30.0, help="seconds per agent call")
    ci.add_argument(
        "--tools",
        type=_tools_file,
        metavar="FILE",
        help='a JSON file listing the agent\'s tools ({"name", "input_schema"} or OpenAI\'s '
        "function tools): Tool arguments are valid checks validate its calls against them",
    )
    ci.set_defaults(handler=_ci)


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "run",
        parents=[_gate_flags()],
        help="run a dataset against a registered agent (the platform calls it)",
        description=GATE_COMMAND_HELP,
    )
    run.add_argument("--agent", required=True, help="the registered agent's id")
    run.add_argument("--wait", action="store_true", help="follow the run and gate on it")
    run.add_argument("--trials", type=_positive, default=1, help="calls per case, 1 to 10")
    run.add_argument("--concurrency", type=_positive, help="agent calls in flight for this run")
    run.set_defaults(handler=_run)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = argparse.ArgumentParser(prog="agentlasso", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    add_server_commands(commands)
    add_user_commands(commands)
    _add_ci(commands)
    _add_run(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `agentlasso` console script."""
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code
