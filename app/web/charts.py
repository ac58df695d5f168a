"""Charts drawn on the server: their geometry in SVG user units and the table of their figures,
computed from plain numbers so that _charts.html only prints them.

Every chart draws in a fixed viewBox the page scales to its width (a phone's too); colours
are the stylesheet's (classes on the shapes), so a chart reads in dark mode as the page does.
A chart with nothing to draw has no geometry, only the sentence that says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import msgspec

from agentlasso.domain.latency_buckets import nice_step

# The rate chart's and the histogram's drawing area, in viewBox units.
WIDE = 600
TALL = 220
LEFT = 44
RIGHT = 8
TOP = 10
BOTTOM = 36
# The horizontal bar chart: a row per bar, its label above it.
BARS_WIDE = 480
BAR_ROW = 40
BAR_HEIGHT = 14
# Room right of the longest bar for its figure ("100.0%", "12,345").
FIGURE_ROOM = 64
# Characters of a label drawn in the chart (the table holds it whole).
LABEL_CHARS = 60
AXIS_LABEL_CHARS = 14
# At most this many x-axis labels: more would run into each other.
X_LABELS = 6
NOTHING_YET = "Nothing to draw yet."


class Tick(msgspec.Struct, frozen=True):
    """A gridline across the plot and the figure it stands for."""

    y: float
    text: str


class Shape(msgspec.Struct, frozen=True):
    """A rectangle drawn for one figure, with what a pointer over it says."""

    x: float
    y: float
    width: float
    height: float
    says: str
    # A point with nothing to draw (no result graded) is marked at the baseline.
    missing: bool = False


class Label(msgspec.Struct, frozen=True):
    """Text drawn in the chart at (x, y)."""

    x: float
    y: float
    text: str
    # SVG's text-anchor: where x is along the text (the outermost labels keep inside the chart).
    anchor: str = "middle"


class Row(msgspec.Struct, frozen=True):
    """One row of a chart's table: its cells, and the page the first cell links to."""

    cells: tuple[str, ...]
    href: str | None = None


class Chart(msgspec.Struct, frozen=True, kw_only=True):
    """A chart: its title and one-sentence description, geometry, and table."""

    id: str
    kind: str
    title: str
    description: str
    width: int
    height: int
    shapes: tuple[Shape, ...] = ()
    ticks: tuple[Tick, ...] = ()
    labels: tuple[Label, ...] = ()
    # Figures drawn beside the bars (the horizontal bar chart).
    figures: tuple[Label, ...] = ()
    columns: tuple[str, ...] = ()
    rows: tuple[Row, ...] = ()
    # Set when there is nothing to draw: the sentence shown instead of the chart.
    nothing_to_draw: str | None = None
    baseline: float = 0.0
    plot_left: float = LEFT
    plot_right: float = WIDE - RIGHT


RateChart = Chart
BarChart = Chart
Histogram = Chart


def rate_chart(
    title: str,
    points: Sequence[tuple[str, int, int]],
    *,
    point_name: str = "Run",
    links: Sequence[str | None] = (),
    chart_id: str | None = None,
) -> RateChart:
    """A column per point of a pass rate, oldest first: each point is (label, passed, graded);
    a point with nothing graded is marked as such. `links` are the pages each table row's
    label links to, in the points' order."""
    identity = chart_id or slug(title)
    if not points:
        return Chart(id=identity, kind="rate", title=title, description="", width=WIDE,
                     height=TALL, nothing_to_draw=f"Nothing to draw yet: no {point_name.lower()}"
                     " has results.")  # fmt: skip
    rates = [passed / graded if graded else None for _, passed, graded in points]
    slot = (WIDE - LEFT - RIGHT) / len(points)
    shapes = tuple(
        _column(index, slot, rate, f"{label}: {_rate_said(passed, graded)}")
        for index, ((label, passed, graded), rate) in enumerate(zip(points, rates, strict=True))
    )
    rows = tuple(
        Row((label, f"{passed:,}", f"{graded:,}", percent(rate)), _link(links, index))
        for index, ((label, passed, graded), rate) in enumerate(zip(points, rates, strict=True))
    )
    return Chart(
        id=identity, kind="rate", title=title, description=_rate_description(point_name, rates),
        width=WIDE, height=TALL, shapes=shapes, ticks=_rate_ticks(),
        labels=_x_labels([label for label, _, _ in points], slot),
        columns=(point_name, "Passed", "Graded", "Pass rate"), rows=rows, baseline=TALL - BOTTOM,
    )  # fmt: skip


def _column(index: int, slot: float, rate: float | None, says: str) -> Shape:
    """A point's column: its height the rate, at least a hairline so 0% shows."""
    plot = TALL - TOP - BOTTOM
    width = min(slot * 0.7, 40.0)
    x = LEFT + index * slot + (slot - width) / 2
    if rate is None:
        return Shape(_round(x), TALL - BOTTOM - 3, _round(width), 3, says, missing=True)
    height = max(rate * plot, 1.0)
    return Shape(_round(x), _round(TALL - BOTTOM - height), _round(width), _round(height), says)


def _rate_ticks() -> tuple[Tick, ...]:
    plot = TALL - TOP - BOTTOM
    return tuple(Tick(_round(TALL - BOTTOM - share * plot), f"{share:.0%}") for share in
                 (0, 0.25, 0.5, 0.75, 1))  # fmt: skip


def _x_labels(texts: Sequence[str], slot: float) -> tuple[Label, ...]:
    """Labels under some columns, evenly spread (always the first and the last)."""
    return tuple(
        _axis_label(LEFT + index * slot, slot, cut(texts[index], AXIS_LABEL_CHARS), index,
                    len(texts))
        for index in _spread(len(texts), X_LABELS)
    )  # fmt: skip


def _axis_label(left: float, slot: float, text: str, index: int, count: int) -> Label:
    """A label under its slot: centred, but the first starts and the last ends at its slot's
    edge, so that neither runs off the chart."""
    y = TALL - BOTTOM + 18
    if count > 1 and index == 0:
        return Label(_round(left), y, text, "start")
    if count > 1 and index == count - 1:
        return Label(_round(left + slot), y, text, "end")
    return Label(_round(left + slot / 2), y, text)


def _spread(count: int, at_most: int) -> list[int]:
    """Up to `at_most` indexes of `count`, evenly spaced, the first and the last among them."""
    if count <= at_most:
        return list(range(count))
    step = (count - 1) / (at_most - 1)
    return sorted({round(place * step) for place in range(at_most)})


def _rate_description(point_name: str, rates: Sequence[float | None]) -> str:
    graded = [rate for rate in rates if rate is not None]
    noun = point_name.lower() + ("" if len(rates) == 1 else "s")
    if not graded:
        return f"{len(rates)} {noun}, none with a graded result."
    return (
        f"Pass rate over {len(rates)} {noun}, oldest first: {percent(graded[0])} at first, "
        f"{percent(graded[-1])} at last; lowest {percent(min(graded))}, highest "
        f"{percent(max(graded))}."
        + (f" {len(rates) - len(graded)} with nothing graded." if len(graded) < len(rates) else "")
    )


def rate_bars(
    title: str,
    items: Sequence[tuple[str, int, int]],
    *,
    label_name: str,
    counted: tuple[str, str] = ("Failed", "Graded"),
    rate_name: str = "Failure rate",
    nothing_to_draw: str = NOTHING_YET,
    chart_id: str | None = None,
) -> BarChart:
    """A bar per item of a rate, in the order given: each is (label, count, out of)."""
    rates = [count / total if total else 0.0 for _, count, total in items]
    rows = tuple(
        Row((label, f"{count:,}", f"{total:,}", percent(rate)))
        for (label, count, total), rate in zip(items, rates, strict=True)
    )
    drawn = [(label, rate, percent(rate)) for (label, _, _), rate in zip(items, rates, strict=True)]
    columns = (label_name, *counted, rate_name)
    return _bars(title, drawn, 1.0, columns, rows, chart_id, nothing_to_draw)


def count_bars(
    title: str,
    items: Sequence[tuple[str, int]],
    *,
    label_name: str,
    count_name: str,
    nothing_to_draw: str = NOTHING_YET,
    chart_id: str | None = None,
) -> BarChart:
    """A bar per item of a count, in the order given, the longest the largest count."""
    rows = tuple(Row((label, f"{count:,}")) for label, count in items)
    drawn = [(label, float(count), f"{count:,}") for label, count in items]
    most = max((count for _, count in items), default=0)
    columns = (label_name, count_name)
    return _bars(title, drawn, float(most), columns, rows, chart_id, nothing_to_draw)


def _bars(
    title: str,
    drawn: Sequence[tuple[str, float, str]],
    scale: float,
    columns: tuple[str, ...],
    rows: tuple[Row, ...],
    chart_id: str | None,
    nothing_to_draw: str,
) -> BarChart:
    """Horizontal bars, each under its label, its figure at its end."""
    identity = chart_id or slug(title)
    if not drawn:
        return Chart(id=identity, kind="bars", title=title, description="", width=BARS_WIDE,
                     height=BAR_ROW, nothing_to_draw=nothing_to_draw)  # fmt: skip
    longest = BARS_WIDE - FIGURE_ROOM
    shapes, labels, figures = [], [], []
    for index, (label, value, figure) in enumerate(drawn):
        top = index * BAR_ROW
        width = _round(value / scale * longest) if scale else 0.0
        shapes.append(Shape(0, top + 20, max(width, 1.0), BAR_HEIGHT, f"{label}: {figure}"))
        labels.append(Label(0, top + 14, cut(label, LABEL_CHARS), "start"))
        figures.append(Label(_round(max(width, 1.0) + 6), top + 31, figure, "start"))
    said = "; ".join(f"{label}: {figure}" for label, _, figure in drawn[:3])
    return Chart(
        id=identity, kind="bars", title=title,
        description=f"{len(drawn)} bar{'' if len(drawn) == 1 else 's'}. {said}"
        + ("; and more in the table." if len(drawn) > 3 else "."),
        width=BARS_WIDE, height=len(drawn) * BAR_ROW, shapes=tuple(shapes), labels=tuple(labels),
        figures=tuple(figures), columns=columns, rows=rows, plot_left=0, plot_right=BARS_WIDE,
    )  # fmt: skip


def latency_histogram(
    title: str,
    buckets: Sequence[tuple[int, int | None, int]],
    *,
    nothing_to_draw: str = "Nothing to draw: no result has an agent latency.",
    counted_of: str = "",
    chart_id: str | None = None,
) -> Histogram:
    """A bar per latency bucket (from_ms, to_ms or None for "and over", results), side by
    side; `counted_of` says what the results were counted among, for the description."""
    identity = chart_id or slug(title)
    total = sum(count for _, _, count in buckets)
    if not total:
        return Chart(id=identity, kind="histogram", title=title, description="", width=WIDE,
                     height=TALL, nothing_to_draw=nothing_to_draw)  # fmt: skip
    slot = (WIDE - LEFT - RIGHT) / len(buckets)
    top, ticks = _count_ticks(max(count for _, _, count in buckets))
    plot = TALL - TOP - BOTTOM
    shapes = tuple(
        Shape(_round(LEFT + index * slot + 1), _round(TALL - BOTTOM - count / top * plot),
              _round(slot - 2), _round(count / top * plot),
              f"{bucket_text(low, high)}: {count:,} result{'' if count == 1 else 's'}")
        for index, (low, high, count) in enumerate(buckets)
    )  # fmt: skip
    edges = [low for low, _, _ in buckets] + [high for _, high, _ in buckets[-1:] if high]
    # An edge's label is centred on it: as a slot of zero width at the edge.
    labels = tuple(
        _axis_label(LEFT + index * slot, 0, duration_text(edges[index]), index, len(edges))
        for index in range(0, len(edges), math.ceil((len(edges) - 1) / (X_LABELS - 1)) or 1)
    )
    rows = tuple(
        Row((bucket_text(low, high), f"{count:,}", percent(count / total)))
        for low, high, count in buckets
    )
    busiest = max(buckets, key=lambda bucket: bucket[2])
    description = (
        f"{total:,} results{counted_of} in {len(buckets)} buckets of agent latency, from "
        f"{duration_text(buckets[0][0])}; the most, {busiest[2]:,}, took "
        f"{bucket_text(busiest[0], busiest[1])}."
    )
    return Chart(
        id=identity, kind="histogram", title=title, description=description, width=WIDE,
        height=TALL, shapes=shapes, ticks=ticks, labels=labels,
        columns=("Agent latency", "Results", "Share"), rows=rows, baseline=TALL - BOTTOM,
    )  # fmt: skip


def _count_ticks(most: int) -> tuple[int, tuple[Tick, ...]]:
    """The count at the top of the plot (round, at least `most`) and its gridlines."""
    step = nice_step(most / 4)
    top = math.ceil(most / step) * step
    plot = TALL - TOP - BOTTOM
    ticks = tuple(
        Tick(_round(TALL - BOTTOM - value / top * plot), f"{value:,}")
        for value in range(0, top + 1, step)
    )
    return top, ticks


def bucket_text(low_ms: int, high_ms: int | None) -> str:
    """A bucket as people read it: "200–300 ms", "1–1.5 s", "5 s and over"."""
    if high_ms is None:
        return f"{duration_text(low_ms)} and over"
    if high_ms < 1000 or low_ms >= 1000:
        return f"{duration_text(low_ms).split()[0]}–{duration_text(high_ms)}"
    return f"{duration_text(low_ms)} – {duration_text(high_ms)}"


def duration_text(ms: int) -> str:
    """Milliseconds as people read them: "250 ms", "1.5 s", "12 s"."""
    if ms < 1000:
        return f"{ms:,} ms"
    return f"{ms / 1000:,.3f}".rstrip("0").rstrip(".") + " s"


def percent(rate: float | None) -> str:
    """A rate as the app writes it (as the `percent` filter does); "n/a" for none."""
    return "n/a" if rate is None else f"{rate * 100:.1f}%"


def cut(text: str, limit: int) -> str:
    """One line of at most `limit` characters, an ellipsis where it was cut."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def slug(title: str) -> str:
    """An id for the chart's elements, from its title."""
    return "chart-" + (re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40] or "figure")


def _rate_said(passed: int, graded: int) -> str:
    if not graded:
        return "nothing graded"
    return f"{percent(passed / graded)} ({passed:,} of {graded:,} passed)"


def _link(links: Sequence[str | None], index: int) -> str | None:
    return links[index] if index < len(links) else None


def _round(value: float) -> float:
    """Coordinates to a tenth of a unit: finer than any screen shows, shorter to send."""
    return round(value, 1)
