"""Near-duplicate inputs, by normalised text similarity (pure).

Texts are compared after normalising: case folded, punctuation and symbols turned into spaces,
whitespace collapsed. Two are near-duplicates when the Jaccard similarity of their character
trigrams (as pg_trgm counts them) reaches SIMILARITY_THRESHOLD: "Refund order 1234, please!"
and "refund order 1234 please" are the same case (1.0), and so are the same question about
orders 1234 and 1235 (0.89); "Refund order 1234" and "Cancel order 1234" (0.42) are not.
Sets, not an edit distance: comparing a candidate with thousands of long inputs stays linear
in their length (difflib's ratio is quadratic, seconds for one pair of long texts).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

SIMILARITY_THRESHOLD = 0.8
# Characters of a normalised text compared: a long input is told apart by its start.
COMPARED_CHARS = 2_000
# Runs of anything but letters and digits: punctuation, symbols, spaces, controls.
_NOT_WORD = re.compile(r"[\W_]+")


def normalised(text: str) -> str:
    """Lower case, punctuation and symbols as spaces, whitespace collapsed."""
    folded = text[: 2 * COMPARED_CHARS].casefold()
    return _NOT_WORD.sub(" ", folded).strip()[:COMPARED_CHARS]


def input_text(case_input: str | dict[str, Any]) -> str:
    """A case input as text: a string as is, structured input as JSON with sorted keys."""
    if isinstance(case_input, str):
        return case_input
    return msgspec.json.encode(case_input, order="sorted").decode()


def trigrams(text: str) -> frozenset[str]:
    """A normalised text's character trigrams, its ends padded with a space."""
    padded = f" {text} "
    return frozenset(padded[index : index + 3] for index in range(len(padded) - 2))


def similarity(first: frozenset[str], second: frozenset[str]) -> float:
    """The Jaccard similarity of two trigram sets, 0 to 1."""
    if not first or not second:
        return 0.0
    return len(first & second) / len(first | second)


def _near_sets(first: frozenset[str], second: frozenset[str]) -> bool:
    # Jaccard is at most the smaller set over the larger: unequal sizes decide at once.
    if min(len(first), len(second)) < SIMILARITY_THRESHOLD * max(len(first), len(second)):
        return False
    return similarity(first, second) >= SIMILARITY_THRESHOLD


def near(first: str, second: str) -> bool:
    """Whether two normalised texts are near-duplicates."""
    if first == second:
        return True
    if not first or not second:
        return False
    return _near_sets(trigrams(first), trigrams(second))


class SeenInputs:
    """The inputs a new one must not repeat: the dataset's, and those accepted so far."""

    def __init__(self, inputs: list[str] | tuple[str, ...] = ()) -> None:
        self._seen: list[tuple[str, frozenset[str], str]] = []
        for text in inputs:
            self.add(text)

    def resembled(self, text: str) -> str | None:
        """The input this one nearly repeats, or None."""
        candidate = normalised(text)
        if not candidate:
            return None
        shingles = trigrams(candidate)
        return next(
            (
                raw
                for seen, seen_shingles, raw in self._seen
                if candidate == seen or _near_sets(shingles, seen_shingles)
            ),
            None,
        )

    def add(self, text: str) -> None:
        """Remember an input."""
        seen = normalised(text)
        if seen:
            self._seen.append((seen, trigrams(seen), text))
