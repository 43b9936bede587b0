"""Prometheus metrics of a serving process: requests by model and status, their latency, batch
sizes and queue depths, in the text exposition format `GET /metrics` answers with."""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
CONTENT_TYPE = "text/plain; version=0.0.4"


def _histogram(metric: str, model: str, bounds, counts, total_sum) -> list[str]:
    """Prometheus cumulative buckets, then _sum (when known) and _count."""
    lines, running = [], 0
    for bound, c in zip(list(bounds) + ["+Inf"], counts):
        running += c
        lines.append(f'{metric}_bucket{{model="{model}",le="{bound}"}} {running}')
    if total_sum is not None:
        lines.append(f'{metric}_sum{{model="{model}"}} {total_sum}')
    lines.append(f'{metric}_count{{model="{model}"}} {running}')
    return lines


@dataclass
class Metrics:
    requests: dict = field(default_factory=lambda: defaultdict(int))
    latency: dict = field(default_factory=lambda: defaultdict(lambda: [0] * (len(LATENCY_BUCKETS) + 1)))
    latency_sum: dict = field(default_factory=lambda: defaultdict(float))
    batches: dict = field(default_factory=lambda: defaultdict(lambda: [0] * (len(BATCH_BUCKETS) + 1)))

    def observe(self, model: str, status: int, seconds: float) -> None:
        self.requests[(model, status)] += 1
        self.latency_sum[model] += seconds
        self.latency[model][bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1

    def batch(self, model: str, size: int) -> None:
        self.batches[model][bisect.bisect_left(BATCH_BUCKETS, size)] += 1

    def render(self, queues: dict) -> str:
        lines = ["# TYPE scriptc_requests_total counter"]
        for (model, status), n in sorted(self.requests.items()):
            lines.append(f'scriptc_requests_total{{model="{model}",status="{status}"}} {n}')
        lines.append("# TYPE scriptc_request_seconds histogram")
        for model, counts in sorted(self.latency.items()):
            lines += _histogram("scriptc_request_seconds", model, LATENCY_BUCKETS, counts, self.latency_sum[model])
        lines.append("# TYPE scriptc_batch_size histogram")
        for model, counts in sorted(self.batches.items()):
            lines += _histogram("scriptc_batch_size", model, BATCH_BUCKETS, counts, None)
        lines.append("# TYPE scriptc_queue_depth gauge")
        for model, depth in sorted(queues.items()):
            lines.append(f'scriptc_queue_depth{{model="{model}"}} {depth}')
        return "\n".join(lines) + "\n"
