"""The AI judge: prompts and verdict parsing (pure), and the one client that calls the model."""

from app.judge.client import NO_JUDGE, JudgeAnswer, JudgeClient, JudgeSettings
from app.judge.pricing import cost_usd
from app.judge.prompts import PROMPT_VERSION, JudgeQuestion, cache_key

__all__ = [
    "NO_JUDGE",
    "PROMPT_VERSION",
    "JudgeAnswer",
    "JudgeClient",
    "JudgeQuestion",
    "JudgeSettings",
    "cache_key",
    "cost_usd",
]
