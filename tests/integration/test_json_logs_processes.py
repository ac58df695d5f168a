"""`AGENTLASSO_LOG_FORMAT=json`: every line a real worker or API process writes to stderr, from
start-up to shutdown, is a JSON object with ts, level, logger and message."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from typing import IO, Any

import httpx
import msgspec
import pytest

from agentlasso import queue
from agentlasso.config import Settings
from agentlasso.domain.runs import ChunkRef
from tests.support.processes import ROOT, agentlasso, free_port, wait_ready
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow


class StderrLines:
    """A child process's stderr, read line by line as it comes."""

    def __init__(self, process: subprocess.Popen[str], stream: IO[str] | None = None) -> None:
        self._stderr = stream or process.stderr
        assert self._stderr is not None
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._stderr:
            self.lines.append(line.rstrip("\n"))

    def containing(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def wait_closed(self) -> list[str]:
        self._reader.join(timeout=10)
        return self.lines


@contextlib.contextmanager
def json_logging(argv: list[str], env: dict[str, str]) -> Iterator[StderrLines]:
    """A process run with AGENTLASSO_LOG_FORMAT=json and its stderr captured; it is stopped
    with SIGTERM when the block ends."""
    full_env = {**os.environ, **env, "AGENTLASSO_LOG_FORMAT": "json", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        argv, cwd=ROOT, env=full_env, stderr=subprocess.PIPE, text=True, encoding="utf-8"
    )
    stderr = StderrLines(process)
    try:
        yield stderr
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        stderr.wait_closed()


def json_records(lines: list[str]) -> list[dict[str, Any]]:
    """Each line as a JSON object with the four core fields; fails on the first that is not."""
    records = []
    for line in lines:
        try:
            record = msgspec.json.decode(line)
        except msgspec.DecodeError:
            pytest.fail(f"not a JSON line on stderr: {line!r}\nall of stderr:\n" + "\n".join(lines))
        assert isinstance(record, dict), line
        assert {"ts", "level", "logger", "message"} <= record.keys(), line
        records.append(record)
    return records


def process_env(settings: Settings) -> dict[str, str]:
    return {
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": settings.redis_url,
        "AGENTLASSO_QUEUE": settings.queue_name,
        "AGENTLASSO_SECRET_KEY": settings.secret_key or "",
        "AGENTLASSO_ALLOW_PRIVATE_AGENTS": "1",
    }


async def test_a_worker_logs_json_from_start_up_through_a_job_to_shutdown(
    settings: Settings,
) -> None:
    argv = agentlasso("worker", "--concurrency", "4")
    # A job for a chunk nobody queued: the worker takes it, finds nothing to claim, and ends it.
    chunk = ChunkRef(run_id=uuid.uuid4(), chunk_no=0, job_id=f"log-test-{uuid.uuid4().hex}")
    with json_logging(argv, process_env(settings)) as stderr:
        redis = await queue.connect(settings.redis_url)
        try:
            await queue.enqueue_lanes(redis, settings.queue_name, [chunk])
        finally:
            await redis.aclose()
        wait_until(lambda: stderr.containing(f"{chunk.job_id}:run_lane ●"), 30, what="the job")
    records = json_records(stderr.lines)
    messages = [(r["logger"], r["message"]) for r in records]
    assert any(m.startswith("Starting worker") for _, m in messages), messages
    assert any(m.startswith("shutdown on SIGTERM") for _, m in messages), messages
    assert {logger for logger, _ in messages} >= {"arq.worker"}


def test_an_api_logs_json_from_start_up_through_requests_to_shutdown(settings: Settings) -> None:
    port = free_port()
    argv = agentlasso("api", "--port", str(port), "--log-level", "info")
    base_url = f"http://127.0.0.1:{port}"
    with json_logging(argv, process_env(settings)) as stderr:
        wait_ready(base_url)
        assert httpx.get(f"{base_url}/api/v1/datasets?token=not-logged").status_code == 401
        wait_until(lambda: stderr.containing("/api/v1/datasets"), 10, what="the access line")
    records = json_records(stderr.lines)
    assert any(r["message"].startswith("Started server process") for r in records), records
    assert any(r["message"].startswith("Finished server process") for r in records), records
    access = [r for r in records if r["logger"] == "uvicorn.access"]
    assert {"method": "GET", "path": "/ready", "status_code": 200}.items() <= access[0].items()
    assert any(r["path"] == "/api/v1/datasets" and r["status_code"] == 401 for r in access)
    assert "not-logged" not in "\n".join(stderr.lines)


@pytest.mark.parametrize("command", ["api", "worker"])
def test_an_unknown_log_format_stops_the_process_naming_the_variable(command: str) -> None:
    done = subprocess.run(
        agentlasso(command), cwd=ROOT, env={**os.environ, "AGENTLASSO_LOG_FORMAT": "yaml"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: AGENTLASSO_LOG_FORMAT must be one of text, json, got 'yaml'"
    )


@pytest.mark.parametrize("command", ["api", "worker"])
def test_a_setting_refused_at_start_up_is_logged_as_json(command: str) -> None:
    env = {**os.environ, "AGENTLASSO_LOG_FORMAT": "json", "AGENTLASSO_DB_POOL_MIN": "many"}
    done = subprocess.run(
        agentlasso(command), cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    [record] = json_records(done.stderr.splitlines())
    assert record["level"] == "CRITICAL"
    assert record["message"] == "AGENTLASSO_DB_POOL_MIN must be a whole number, got 'many'"


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_sign_in_links_token_is_in_no_log_line(settings: Settings, log_format: str) -> None:
    """Opening a sign-in link and pressing its button: the token is in neither access line, in
    uvicorn's own text format as in JSON."""
    port = free_port()
    argv = agentlasso("api", "--port", str(port), "--log-level", "info")
    base_url = f"http://127.0.0.1:{port}"
    token = f"link-{uuid.uuid4().hex}"
    env = {**os.environ, **process_env(settings), "AGENTLASSO_LOG_FORMAT": log_format}
    env["PYTHONUNBUFFERED"] = "1"
    process = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output = StderrLines(process, stream=process.stdout)
    try:
        wait_ready(base_url)
        with httpx.Client(base_url=base_url) as web:
            assert web.get("/login", params={"token": token, "next": "/runs"}).status_code == 401
            web.post("/login/link", data={"token": token, "login_token": "x"})
        wait_until(lambda: output.containing("/login/link"), 10, what="the access lines")
    finally:
        process.terminate()
        process.wait(timeout=30)
    logged = "\n".join(output.wait_closed())
    assert "/login" in logged
    assert token not in logged
    if log_format == "text":
        assert "token=[redacted]&next=%2Fruns" in logged, logged
