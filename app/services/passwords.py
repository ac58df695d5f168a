"""Passwords: the policy a new one must meet, and Argon2id hashing off the event loop.

Parameters: OWASP's first Argon2id choice (46 MiB, one pass, one lane). On this project's
2-core machine a verify takes about 60 ms (tests/perf/bench_sign_in_timing.py), under the
150 ms a sign-in may take in all.
"""

from __future__ import annotations

import asyncio

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from agentlasso.errors import FieldError, InvalidInput

MIN_LENGTH = 12
# Long passphrases are welcome; past this the hash would only be made to do needless work.
MAX_LENGTH = 256
_HASHER = PasswordHasher(time_cost=1, memory_cost=47_104, parallelism=1)
# A hash nobody's password matches: an unknown email is verified against it, so it takes as
# long to refuse as a wrong password does.
_DUMMY_HASH = _HASHER.hash("not anyone's password: only here to take the time a verify takes")


def password_problem(password: str, email: str) -> str | None:
    """What is wrong with a new password, in words; None when it will do."""
    if len(password) < MIN_LENGTH:
        return f"Use at least {MIN_LENGTH} characters (a few words make a good password)."
    if len(password) > MAX_LENGTH:
        return f"Use at most {MAX_LENGTH} characters."
    if not password.strip():
        return "A password cannot be only spaces."
    if password.strip().lower() == email.strip().lower():
        return "Use something other than your email as your password."
    return None


def check_new_password(password: str, email: str, field: str = "password") -> None:
    """InvalidInput naming the field when the password does not meet the policy."""
    problem = password_problem(password, email)
    if problem is not None:
        raise InvalidInput(problem, [FieldError(pointer=f"/{field}", detail=problem)])


async def hash_password(password: str) -> str:
    """The Argon2id hash of a password (PHC string), computed on a thread."""
    return await asyncio.to_thread(_HASHER.hash, password)


async def verify_password(password_hash: str | None, password: str) -> bool:
    """Whether the password matches the hash; with no hash, as slow a False."""
    return await asyncio.to_thread(_verify, password_hash, password)


def needs_rehash(password_hash: str) -> bool:
    """Whether a hash was made with other parameters than today's."""
    return _HASHER.check_needs_rehash(password_hash)


def _verify(password_hash: str | None, password: str) -> bool:
    # Past the limit nothing can match: cut it so a huge body is not hashed at length.
    candidate = password[: MAX_LENGTH + 1]
    try:
        matched = _HASHER.verify(password_hash or _DUMMY_HASH, candidate)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False
    return matched and password_hash is not None
