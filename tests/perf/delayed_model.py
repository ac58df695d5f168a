"""A fast fake of the model for benchmarks: `python -m tests.perf.delayed_model MS`.

Every POST is answered after the delay as a simulated user who goes on (the answer
tests/support/fake_anthropic.py gives such a request by default, without its checks of the
request); `GET /count` answers how many it answered. It prints its port on its first line.

Asyncio's raw protocol in a process of its own, as tests/perf/delayed_agent.py: the threaded
fake of the tests cost about 2 ms of CPU a request, a whole core of this 2-core machine at a
benchmark's 500 requests a second, and the real model's CPU is not on the platform's machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys

from tests.perf.delayed_agent import DelayedAgent, response_with, serve_with
from tests.support.fake_anthropic import SIMULATED_MESSAGE, USAGE

# The model it says answered: the benchmark configures the judge's model to match, so the run's
# cost is priced as that model's.
MODEL = "claude-sonnet-5-5"
GOES_ON = {"reason": "Pressing for an answer.", "status": "continue", "message": SIMULATED_MESSAGE}
MESSAGE = {
    "id": "msg_bench", "type": "message", "role": "assistant", "model": MODEL,
    "content": [{"type": "text", "text": json.dumps(GOES_ON)}], "stop_reason": "end_turn",
    "stop_sequence": None, "usage": USAGE,
}  # fmt: skip


class DelayedModel(DelayedAgent):
    """Answers each POST after the delay; a GET of /count at once, with the count."""

    response = response_with(json.dumps(MESSAGE).encode())
    answered = 0

    def received(self, head: bytes) -> None:
        if head.startswith(b"GET /count "):
            self.transport.write(response_with(str(DelayedModel.answered).encode()))
            return
        super().received(head)

    def answer(self) -> None:
        DelayedModel.answered += 1
        super().answer()


async def serve(delay_ms: float) -> None:
    DelayedModel.delay_s = delay_ms / 1000
    await serve_with(DelayedModel)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(float(sys.argv[1]) if len(sys.argv) > 1 else 0))
