"""The dataset page's and the run page's charts in Chromium: drawn as inline SVG, their figures
read as tables by role and checked against the runs the test made, axe-core clean in light and
dark mode, legible in dark mode, and no wider than a phone."""

from __future__ import annotations

import re
from typing import Any

import httpx
from playwright.async_api import Locator, Page, expect

from tests.support.api import create_case, create_dataset, start_run
from tests.support.browser import assert_accessible, screenshot

DELAY = {"type": "output_contains", "value": "3-5 business days", "id": "delay"}
NO_CANCEL = {"type": "tool_not_called", "tool": "orders.cancel", "id": "keep"}
GOOD = "Your refund is on its way: 3-5 business days."
PHONE = {"width": 375, "height": 740}
# Per run (oldest first), per case: does the agent give the delay, does it cancel the order.
RUNS = [
    [(True, False), (True, False), (True, False)],
    [(False, False), (True, False), (True, True)],
    [(False, False), (False, True), (True, False)],
]
LATENCIES_MS = [100, 150, 250, 250, 350, 990]


async def _runs_of_a_dataset(client: httpx.AsyncClient) -> tuple[str, list[str]]:
    """A dataset of three cases, each checked for the delay and for no cancelled order, and the
    runs of RUNS posted to it; the dataset's id and the runs' ids, oldest first."""
    dataset = await create_dataset(client, name="Refund trends")
    cases = [
        (await create_case(client, dataset["id"], input=f"Refund {n}", checks=[DELAY, NO_CANCEL]))[
            "id"
        ]
        for n in range(3)
    ]
    run_ids = []
    for verdicts in RUNS:
        run = await start_run(client, dataset_id=dataset["id"])
        results = [_result(case, *verdict) for case, verdict in zip(cases, verdicts, strict=True)]
        posted = await client.post(
            "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": results}
        )
        assert posted.status_code == 200, posted.text
        run_ids.append(run["run_id"])
    return dataset["id"], run_ids


def _result(case_id: str, gives_delay: bool, cancels: bool, latency_ms: int = 200) -> Any:
    calls = [{"name": "orders.cancel", "arguments": {}}] if cancels else []
    return {
        "test_case_id": case_id,
        "actual_output": GOOD if gives_delay else "Sorry.",
        "actual_tool_calls": calls,
        "latency_ms": latency_ms,
    }


def _percent(rate: float) -> str:
    return f"{rate * 100:.1f}%"


async def _figures(page: Page, chart: str) -> Locator:
    """The table of a chart's figures, opened as a person opens it."""
    figure = page.get_by_role("figure", name=chart)
    await figure.get_by_text("The figures").click()
    table = page.get_by_role("table", name=chart)
    await expect(table).to_be_visible()
    return table


async def _cells(table: Locator) -> list[list[str]]:
    """The table's body, row by row (the row header first)."""
    rows = table.locator("tbody tr")
    return [
        [text.strip() for text in await rows.nth(index).locator("th, td").all_inner_texts()]
        for index in range(await rows.count())
    ]


async def _reads_in_both_schemes_and_on_a_phone(
    page: Page, chart_names: list[str], shown_as: str
) -> None:
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        await assert_accessible(page, context=f"charts, {scheme}")
        for name in chart_names:
            await _legible(page.get_by_role("figure", name=name))
    await page.emulate_media(color_scheme="dark")
    await screenshot(page, f"{shown_as}-charts-dark")
    await page.set_viewport_size(PHONE)
    await page.reload()
    wide = await page.evaluate("document.documentElement.scrollWidth")
    assert wide <= PHONE["width"], f"the page is {wide}px wide on a {PHONE['width']}px phone"
    for name in chart_names:
        box = await page.get_by_role("img", name=name).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    await screenshot(page, f"{shown_as}-charts-phone")


async def _legible(figure: Locator) -> None:
    """The chart's text stands out from the page's background (WCAG's 4.5:1), as drawn."""
    ratio = await figure.locator("svg text").first.evaluate(
        """text => {
            const rgb = c => c.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
            const lum = c => {
                const [r, g, b] = rgb(c).map(v => v / 255).map(
                    v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
                return 0.2126 * r + 0.7152 * g + 0.0722 * b;
            };
            const fg = lum(getComputedStyle(text).fill);
            const bg = lum(getComputedStyle(document.body).backgroundColor);
            return (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
        }"""
    )
    assert ratio >= 4.5, f"the chart's text has a contrast of {ratio:.2f} with the page"


async def test_the_dataset_page_charts_its_runs_pass_rate_and_failing_criteria(
    signed_in_page: Page, base_url: str, api_key: str
) -> None:
    page = signed_in_page
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as client:
        dataset_id, run_ids = await _runs_of_a_dataset(client)

    await page.goto(f"/datasets/{dataset_id}")
    title = f"Pass rate of the last {len(RUNS)} runs"
    await expect(page.get_by_role("img", name=title)).to_be_visible()
    rows = await _cells(await _figures(page, title))
    expected = []
    for verdicts in RUNS:
        passed = sum(1 for delay, cancels in verdicts if delay and not cancels)
        expected.append([str(passed), str(len(verdicts)), _percent(passed / len(verdicts))])
    assert [row[1:] for row in rows] == expected

    criteria = "Criteria failed most often, by failure rate"
    failed = {
        "Output must contain: “3-5 business days”": sum(not d for run in RUNS for d, _ in run),
        "Tool must NOT be called: orders.cancel": sum(c for run in RUNS for _, c in run),
    }
    graded = sum(len(run) for run in RUNS)
    by_rate = sorted(failed.items(), key=lambda item: -item[1])
    assert await _cells(await _figures(page, criteria)) == [
        [label, str(count), str(graded), _percent(count / graded)] for label, count in by_rate
    ]

    await _reads_in_both_schemes_and_on_a_phone(page, [title, criteria], "dataset")
    await page.get_by_text("The figures").first.click()
    await page.get_by_role("table", name=title).get_by_role("link").last.click()
    await expect(page).to_have_url(re.compile(f"/runs/{run_ids[-1]}$"))


async def test_the_run_page_charts_the_agents_latency_and_failures_by_check_type(
    signed_in_page: Page, base_url: str, api_key: str
) -> None:
    page = signed_in_page
    verdicts = [
        (True, False),
        (False, False),
        (False, True),
        (True, True),
        (False, False),
        (True, False),
    ]
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}) as client:
        dataset = await create_dataset(client, name="Latency")
        cases = [
            (await create_case(client, dataset["id"], input=f"Q{n}", checks=[DELAY, NO_CANCEL]))[
                "id"
            ]
            for n in range(len(verdicts))
        ]
        run = await start_run(client, dataset_id=dataset["id"])
        results = [
            _result(case, *verdict, latency_ms=latency)
            for case, verdict, latency in zip(cases, verdicts, LATENCIES_MS, strict=True)
        ]
        posted = await client.post(
            "/api/v1/eval-run-results", json={"run_id": run["run_id"], "results": results}
        )
        assert posted.status_code == 200, posted.text

    await page.goto(f"/runs/{run['run_id']}")
    rows = await _cells(await _figures(page, "Agent latency"))
    assert sum(int(row[1]) for row in rows) == len(LATENCIES_MS)
    for label, count, share in rows:
        low, high = _bucket(label)
        inside = [ms for ms in LATENCIES_MS if low <= ms and (high is None or ms < high)]
        assert (int(count), share) == (len(inside), _percent(len(inside) / len(LATENCIES_MS))), (
            label
        )

    failures = await _cells(await _figures(page, "Failed checks by check type"))
    expected = {
        "Output must contain": sum(not delay for delay, _ in verdicts),
        "Tool must NOT be called": sum(cancels for _, cancels in verdicts),
    }
    assert failures == [
        [name, str(count)] for name, count in sorted(expected.items(), key=lambda i: -i[1])
    ]
    await _reads_in_both_schemes_and_on_a_phone(
        page, ["Agent latency", "Failed checks by check type"], "run"
    )


def _bucket(label: str) -> tuple[float, float | None]:
    """A bucket's range in ms from how the table writes it ("100–200 ms", "1–1.5 s",
    "500 ms – 1 s", "5 s and over")."""
    numbers = re.findall(r"([\d.,]+)\s*(ms|s)?", label)
    units = [unit or label.split()[-1] for _, unit in numbers]
    values = [
        float(n.replace(",", "")) * (1000 if u == "s" else 1)
        for (n, _), u in zip(numbers, units, strict=True)
    ]
    return values[0], (None if "and over" in label else values[1])
