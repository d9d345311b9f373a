"""The service's Prometheus metrics, in a registry of their own (one per app).

Requests and latency per route (the route's template, such as ``/v1/books/{name}``, so the label
set stays small; a path that matches no route counts as ``unmatched``); activations, entries
activated and budget overflows; compile time; compiled-book cache hits, misses, evictions and
size; sessions stored (counted in the store when scraped).

Under ``lorescan serve --processes N`` (``PROMETHEUS_MULTIPROC_DIR`` set by the supervisor) each
process writes its values to files there, and a scrape sums them over the processes: counters and
histograms add up, the cache gauges are summed over the processes alive.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
COMPILE_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

__all__ = ["CONTENT_TYPE", "Metrics"]


class Metrics:
    """Every metric the service exports."""

    def __init__(self, sessions: Callable[[], float]) -> None:
        #: several service processes share the figures (see the module docstring)
        self.shared = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self.registry = registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("lorescan_requests", "HTTP requests, by route, method and status",
                                ("route", "method", "status"), registry=registry)
        self.latency = Histogram("lorescan_request_seconds", "Time to answer an HTTP request, by route",
                                 ("route", "method"), buckets=LATENCY_BUCKETS, registry=registry)
        self.activations = Counter("lorescan_activations", "Evaluations run (one per turn)", registry=registry)
        self.entries_activated = Counter("lorescan_entries_activated", "Entries activated, over all evaluations",
                                         registry=registry)
        self.overflows = Counter("lorescan_budget_overflows", "Evaluations whose budget overflowed",
                                 registry=registry)
        self.compile_seconds = Histogram("lorescan_compile_seconds", "Time to compile a set of books",
                                         buckets=COMPILE_BUCKETS, registry=registry)
        self.cache_hits = Counter("lorescan_cache_hits", "Compiled-book cache hits (waiting on a compile "
                                  "in progress included)", registry=registry)
        self.cache_misses = Counter("lorescan_cache_misses", "Compiled-book cache misses (compiles started)",
                                    registry=registry)
        self.cache_evictions = Counter("lorescan_cache_evictions", "Compiled books evicted to stay within "
                                       "--cache-mb", registry=registry)
        self.cache_bytes = Gauge("lorescan_cache_bytes", "Estimated size of the compiled books held",
                                 registry=registry, multiprocess_mode="livesum")
        self.cache_books = Gauge("lorescan_cache_entries", "Compiled book sets held", registry=registry,
                                 multiprocess_mode="livesum")
        self._sessions = _Sessions(sessions)
        if not self.shared:
            registry.register(self._sessions)

    def render(self) -> bytes:
        """The exposition text for ``GET /metrics``."""
        if not self.shared:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        summed = CollectorRegistry()
        multiprocess.MultiProcessCollector(summed)
        summed.register(self._sessions)
        return generate_latest(summed)


class _Sessions(Collector):
    """``lorescan_sessions``: counted in the store when scraped."""

    def __init__(self, count: Callable[[], float]) -> None:
        self.count = count

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily("lorescan_sessions", "Sessions stored")

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily("lorescan_sessions", "Sessions stored", value=self.count())
