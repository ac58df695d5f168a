"""`agentlasso users create`: a member of an organisation, and the link that sets their
password."""

from __future__ import annotations

import argparse
import asyncio
import sys

from agentlasso.domain.accounts import ROLES

DEFAULT_URL = "http://127.0.0.1:8000"


def users_create(args: argparse.Namespace) -> int:
    """`agentlasso users create`: a new user, their one-time set-password link alone on the
    last line."""
    from agentlasso.config import load_settings
    from agentlasso.errors import AgentLassoError
    from agentlasso.services.accounts import PASSWORD_LINK_VALID_FOR, create_user_at

    settings = load_settings()
    try:
        created = asyncio.run(
            create_user_at(settings.database_url, args.email, args.org, args.role)
        )
    except AgentLassoError as exc:
        print(f"error: {exc.detail}", file=sys.stderr)
        return 1
    base = (settings.public_url or DEFAULT_URL).rstrip("/")
    print(
        f"Created {args.email} ({args.role} of organisation {args.org!r}). Send them this link to"
        f" set their password; it works once, within {PASSWORD_LINK_VALID_FOR.days} days:"
    )
    print(f"{base}/set-password?token={created.password_token}")
    return 0


def add_user_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`users` and its subcommands."""
    users = commands.add_parser("users", help="manage the people who sign in")
    user_commands = users.add_subparsers(dest="users_command", required=True)
    create = user_commands.add_parser(
        "create",
        help="create a user and print a link that sets their password",
        description="Creates a user as a member of the organisation (created, with a project of"
        " its name, if missing) and prints a one-time link to set their password, valid 7 days."
        " The link starts with AGENTLASSO_PUBLIC_URL (default http://127.0.0.1:8000).",
    )
    create.add_argument("--email", required=True, help="the address they sign in with")
    create.add_argument("--org", required=True, help="the organisation's name")
    create.add_argument("--role", required=True, choices=ROLES, help="their role in it")
    create.set_defaults(handler=users_create)
