"""The schema registry's Prometheus metrics, scraped from the broker's metrics listener."""

from __future__ import annotations

import re

import pytest
import requests

pytestmark = pytest.mark.interop


def test_registry_metrics(fresh_registry_broker):
    rb = fresh_registry_broker({"metrics.listener": "127.0.0.1:0"})
    metrics_url = re.findall(r"metrics on (http://\S+/metrics)", rb.broker.log_path.read_text())[-1]
    assert requests.post(f"{rb.url}/subjects/m/versions", json={"schema": '"string"'}).status_code == 200
    assert requests.get(f"{rb.url}/subjects/nosuch/versions").status_code == 404
    text = requests.get(metrics_url, timeout=10).text
    samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if line.startswith("tidelog_schema_registry"))
    assert float(samples['tidelog_schema_registry_requests_total{method="POST",status="200"}']) == 1
    assert float(samples['tidelog_schema_registry_requests_total{method="GET",status="404"}']) == 1
    assert float(samples["tidelog_schema_registry_subjects"]) == 1
    assert float(samples["tidelog_schema_registry_schemas"]) == 1
    assert float(samples["tidelog_schema_registry_ready"]) == 1
    assert float(samples["tidelog_schema_registry_log_position"]) == 1
