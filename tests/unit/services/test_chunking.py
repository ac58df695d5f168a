"""How a server-mode run is cut into chunks and lanes: never more calls in flight than the
run's concurrency, and never a chunk bigger than a lane's calls."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentlasso.domain.runs import MAX_CHUNK_SIZE
from agentlasso.services.start_run import chunking


@given(total=st.integers(0, 1_000_000), concurrency=st.integers(1, 100_000))
def test_lanes_never_call_more_than_the_runs_concurrency(total: int, concurrency: int) -> None:
    size, count, lanes = chunking(total, concurrency)
    assert 1 <= size <= MAX_CHUNK_SIZE
    assert count * size >= total > (count - 1) * size
    # Every lane busy: as many calls in flight as the concurrency allows, less a call a lane.
    full_lanes = -(-concurrency // MAX_CHUNK_SIZE)
    assert lanes == min(count, full_lanes)
    assert concurrency - full_lanes < full_lanes * size <= concurrency


def test_a_concurrency_that_is_no_multiple_of_a_chunk_is_split_evenly() -> None:
    assert chunking(1200, 120) == (40, 30, 3)
    assert chunking(100_000, 4000) == (50, 2000, 80)
    assert chunking(10, 7) == (7, 2, 1)  # one lane of 7 calls, two chunks in turn
