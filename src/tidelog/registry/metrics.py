"""The schema registry's Prometheus metrics, read at scrape time (the broker's metrics service
registers this collector when the registry is on):

    tidelog_schema_registry_requests_total{method,status}  requests answered (malformed ones aside)
    tidelog_schema_registry_subjects                       live subjects
    tidelog_schema_registry_schemas                        schema ids known
    tidelog_schema_registry_ready                          1 once `_schemas` was read here
    tidelog_schema_registry_log_position                   the next `_schemas` offset to read
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

if TYPE_CHECKING:
    from .http import RegistryServer


class RegistryCollector:
    def __init__(self, server: RegistryServer) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "tidelog_schema_registry_requests", "Schema registry requests answered", labels=["method", "status"]
        )
        for (method, status), n in sorted(self.server.answered.items()):
            requests.add_metric([method, str(status)], n)
        yield requests
        store = self.server.registry.store
        yield GaugeMetricFamily("tidelog_schema_registry_subjects", "Live subjects", len(store.state.subject_names()))
        yield GaugeMetricFamily("tidelog_schema_registry_schemas", "Schema ids known", len(store.state.ids))
        yield GaugeMetricFamily("tidelog_schema_registry_ready", "1 once _schemas was read here", int(store.ready))
        yield GaugeMetricFamily(
            "tidelog_schema_registry_log_position", "The next offset of _schemas to read", store.position
        )
