"""Charts from plain numbers: their geometry in the viewBox and the tables of their figures."""

from __future__ import annotations

import pytest

from agentlasso.domain.latency_buckets import latency_buckets, latency_edges, nice_step
from agentlasso.web.charts import (
    BOTTOM,
    LABEL_CHARS,
    TALL,
    TOP,
    X_LABELS,
    bucket_text,
    count_bars,
    cut,
    latency_histogram,
    rate_bars,
    rate_chart,
)

PLOT_HEIGHT = TALL - TOP - BOTTOM
BASELINE = TALL - BOTTOM


def test_a_rate_chart_of_no_point_says_there_is_nothing_to_draw() -> None:
    chart = rate_chart("Pass rate", [])
    assert chart.nothing_to_draw is not None and "Nothing to draw" in chart.nothing_to_draw
    assert chart.shapes == () and chart.rows == ()


def test_a_rate_chart_of_one_point_draws_one_column_of_its_rate() -> None:
    chart = rate_chart("Pass rate", [("Mon", 3, 4)], links=["/runs/a"])
    (column,) = chart.shapes
    assert column.height == pytest.approx(0.75 * PLOT_HEIGHT, abs=0.1)
    assert column.y + column.height == pytest.approx(BASELINE)
    assert [row.cells for row in chart.rows] == [("Mon", "3", "4", "75.0%")]
    assert chart.rows[0].href == "/runs/a"
    assert [label.text for label in chart.labels] == ["Mon"]


@pytest.mark.parametrize(("passed", "graded", "height"), [(0, 5, 1.0), (5, 5, PLOT_HEIGHT)])
def test_rates_of_0_and_1_span_a_hairline_and_the_whole_plot(
    passed: int, graded: int, height: float
) -> None:
    (column,) = rate_chart("Pass rate", [("r", passed, graded)]).shapes
    assert column.height == pytest.approx(height)
    assert not column.missing


def test_a_point_with_nothing_graded_is_marked_and_said_so() -> None:
    chart = rate_chart("Pass rate", [("a", 1, 2), ("b", 0, 0), ("c", 2, 2)])
    assert [shape.missing for shape in chart.shapes] == [False, True, False]
    assert chart.rows[1].cells == ("b", "0", "0", "n/a")
    assert "1 with nothing graded" in chart.description
    assert "50.0% at first, 100.0% at last" in chart.description


def test_columns_stay_inside_the_plot_in_order() -> None:
    chart = rate_chart("Pass rate", [(f"run {n}", n, 50) for n in range(50)])
    xs = [shape.x for shape in chart.shapes]
    assert xs == sorted(xs)
    assert xs[0] >= chart.plot_left and xs[-1] + chart.shapes[-1].width <= chart.plot_right
    assert len(chart.labels) <= X_LABELS
    assert chart.labels[0].text == "run 0" and chart.labels[-1].text == "run 49"


def test_long_labels_are_cut_in_the_chart_and_whole_in_the_table() -> None:
    label = "The reply apologises and " + "explains " * 20
    chart = rate_bars("Criteria", [(label, 1, 4)], label_name="Criterion")
    assert len(chart.labels[0].text) == LABEL_CHARS and chart.labels[0].text.endswith("…")
    assert chart.rows[0].cells == (label, "1", "4", "25.0%")
    assert cut("short", 10) == "short"


def test_bars_are_as_long_as_their_value_against_the_scale() -> None:
    chart = count_bars(
        "Failures", [("Tool", 4), ("Text", 1)], label_name="Check type", count_name="Failed checks"
    )
    longest, shortest = chart.shapes
    assert shortest.width == pytest.approx(longest.width / 4, abs=0.1)
    assert [row.cells for row in chart.rows] == [("Tool", "4"), ("Text", "1")]
    assert chart.columns == ("Check type", "Failed checks")
    assert chart.height == 2 * (chart.shapes[1].y - chart.shapes[0].y)


def test_no_bars_say_why() -> None:
    chart = count_bars("F", [], label_name="x", count_name="y", nothing_to_draw="None failed.")
    assert chart.nothing_to_draw == "None failed."


@pytest.mark.parametrize(
    ("raw", "step"), [(0.3, 1), (1, 1), (1.5, 2), (3, 5), (7, 10), (89, 100), (120, 200)]
)
def test_steps_are_1_2_or_5_times_a_power_of_ten(raw: float, step: int) -> None:
    assert nice_step(raw) == step


@pytest.mark.parametrize(
    ("lowest", "highest", "edges"),
    [
        (153, 949, [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]),
        (200, 200, [200, 201]),
        (0, 12_000, [0, 2000, 4000, 6000, 8000, 10_000, 12_000, 14_000]),
    ],
)
def test_bucket_edges_are_round_and_hold_the_range(
    lowest: int, highest: int, edges: list[int]
) -> None:
    found = latency_edges(lowest, highest)
    assert found == edges
    assert found[0] <= lowest < highest + 1 <= found[-1]


def test_counts_by_width_bucket_become_buckets_with_an_open_one_for_the_slowest() -> None:
    edges = [100, 200, 300]
    assert latency_buckets(edges, {1: 4, 3: 2}) == [(100, 200, 4), (200, 300, 0), (300, None, 2)]
    assert latency_buckets(edges, {2: 1}) == [(100, 200, 0), (200, 300, 1)]


def test_a_histogram_draws_its_buckets_side_by_side_and_tables_their_share() -> None:
    chart = latency_histogram("Latency", [(100, 200, 3), (200, 300, 1), (300, None, 0)])
    first, second, _ = chart.shapes
    assert second.x > first.x + first.width - 0.1
    assert first.height == pytest.approx(PLOT_HEIGHT * 3 / 3, abs=0.1)
    assert [row.cells for row in chart.rows] == [
        ("100–200 ms", "3", "75.0%"),
        ("200–300 ms", "1", "25.0%"),
        ("300 ms and over", "0", "0.0%"),
    ]
    assert "4 results" in chart.description


def test_a_histogram_of_no_latency_says_there_is_nothing_to_draw() -> None:
    assert latency_histogram("Latency", []).nothing_to_draw is not None
    assert latency_histogram("Latency", [(0, 100, 0)]).nothing_to_draw is not None


@pytest.mark.parametrize(
    ("low", "high", "text"),
    [(100, 200, "100–200 ms"), (500, 1000, "500 ms – 1 s"), (1000, 1500, "1–1.5 s"),
     (5000, None, "5 s and over")],
)  # fmt: skip
def test_buckets_read_as_people_write_durations(low: int, high: int | None, text: str) -> None:
    assert bucket_text(low, high) == text
