"""Benchmark: import and export of 100,000 test cases with 6 checks each.

Targets (issue 2): import in 10 s or less with the API's peak RSS at 300 MB or less; export in
5 s or less with the API's RSS flat while streaming. Run:

    .venv/bin/python tests/perf/bench_import_export.py [--cases 100000]
"""

from __future__ import annotations

import threading
import time

import httpx

from tests.perf.harness import body_chunks, rss_mb, run_against_api


class RssSampler(threading.Thread):
    """Samples a process's RSS every 50 ms until stopped."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.samples, self.running = pid, list[float](), True

    def run(self) -> None:
        while self.running:
            self.samples.append(rss_mb(self.pid))
            time.sleep(0.05)


def run(base_url: str, pid: int, key: str, cases: int) -> None:
    headers = {"x-api-key": key}
    with httpx.Client(base_url=base_url, headers=headers, timeout=300) as client:
        dataset = client.post("/api/v1/datasets", json={"name": "bench"}).json()
        chunks = list(body_chunks(cases))
        size_mb = sum(len(chunk) for chunk in chunks) / 1e6
        rss_before = rss_mb(pid)
        started = time.perf_counter()
        response = client.post(
            f"/api/v1/datasets/{dataset['id']}/test-cases/import",
            content=iter(chunks),
            headers={"content-type": "application/x-ndjson"},
        )
        import_s = time.perf_counter() - started
        assert response.status_code == 201, response.text[:500]
        peak_after_import = rss_mb(pid, "VmHWM")
        print(
            f"import: {cases:,} cases ({size_mb:.0f} MB) in {import_s:.2f} s "
            f"= {cases / import_s:,.0f} cases/s (target <= 10 s)"
        )
        print(
            f"import: API RSS before {rss_before:.0f} MB, peak {peak_after_import:.0f} MB "
            f"(target <= 300 MB)"
        )

        sampler = RssSampler(pid)
        sampler.start()
        started = time.perf_counter()
        lines = 0
        with client.stream("GET", f"/api/v1/datasets/{dataset['id']}/test-cases/export") as stream:
            for chunk in stream.iter_bytes():
                lines += chunk.count(b"\n")
        export_s = time.perf_counter() - started
        sampler.running = False
        sampler.join()
        assert lines == cases, lines
        samples = sampler.samples
        print(
            f"export: {lines:,} cases in {export_s:.2f} s = {lines / export_s:,.0f} cases/s "
            f"(target <= 5 s)"
        )
        print(
            f"export: API RSS while streaming min {min(samples):.0f} MB, "
            f"max {max(samples):.0f} MB over {len(samples)} samples (target: flat)"
        )


def main() -> None:
    run_against_api(run, default_cases=100_000)


if __name__ == "__main__":
    main()
