"""Controlled shutdown and a rolling restart (issue 22's operations part, first piece): SIGTERM makes
a broker hand its leaderships to caught-up in-sync followers before it stops; restarting the three
brokers one after the other under idempotent acks=all load (confluent-kafka, kafka-python, aiokafka) costs no
error beyond retriable ones, the history checker finds no anomaly, and the controller's leader
rebalance puts every partition back on its preferred leader."""

from __future__ import annotations

import re

import pytest
from history import History
from nemesis_clients import Clients
from test_nemesis import final_log, replicated_topic
from test_replication import describe, wait_for

pytestmark = pytest.mark.timeout(600)
# the controller moves leaders back to their preferred replicas soon after the restarts
CLUSTER_OVERRIDES = {"auto.leader.rebalance.enable": "true", "leader.imbalance.check.interval.seconds": "3"}


def test_rolling_restart_under_load_with_controlled_shutdown(cluster):
    c = cluster
    topic = replicated_topic(c, "roll")
    h = History()
    clients = Clients(c, topic, h)
    # every client: confluent-kafka, kafka-python and aiokafka producers and the consumer
    clients.start()
    handed = {}
    try:
        clients.wait_for_load(200)  # every client at work before the first stop
        for node in list(c.brokers):
            led = sum(1 for p in describe(c, topic) if p["leader"] == node)
            assert c.brokers[node].stop() == 0  # SIGTERM: a clean stop
            m = re.findall(r"handed over the leadership of (\d+) partitions", c.brokers[node].log())
            handed[node] = (led, int(m[-1]) if m else None)
            # moved by the handover (counted below); a leader rebalance racing the stop may need
            # the controller's next pass, hence a short wait rather than an instant check
            wait_for(
                lambda node=node: all(p["leader"] not in (node, -1) for p in describe(c, topic)),
                10,
                f"every partition led by a live broker after {node} stopped",
            )
            c.brokers[node].start()
            try:
                wait_for(lambda: all(len(p["isr"]) == 3 for p in describe(c, topic)), 60, "the ISR full again")
            except AssertionError as e:
                parts = describe(c, topic)
                stuck = [f"{topic}-{p['partition']}:" for p in parts if len(p["isr"]) < 3]
                raise AssertionError(f"{e}: {parts}\n{c.logs(*stuck) if stuck else c.logs()}") from None
            clients.wait_for_load(100)  # load on the whole cluster again before the next stop
    finally:
        clients.join()
    assert not clients.fatal, clients.fatal[:5]
    assert all(n is not None and n >= led for led, n in handed.values()), handed  # every topic leadership moved
    assert sum(led for led, _n in handed.values()) > 0
    for p, recs in final_log(c, topic).items():
        h.final(p, recs)
    found = {k: v for k, v in h.check().items() if v}
    assert not found, h.summary()
    assert len(h.acks) == sum(clients.counts.values()) and len(h.acks) > 1000
    # leaders end up balanced: every partition led by its preferred (first) replica again
    wait_for(lambda: all(p["leader"] == p["replicas"][0] for p in describe(c, topic)), 30, "preferred leaders")
