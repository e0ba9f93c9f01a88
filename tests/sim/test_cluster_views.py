"""What a broker tells clients about the cluster, checked against etcd's state on a simulated
cluster: every broker answers the same leaders, epochs, replicas and ISR, whichever API asks."""

from __future__ import annotations

from .scripted import as_client, client, ready_topic, replicas, simulate, state


def test_describe_topic_partitions_answers_the_cluster_s_leadership_from_every_broker():
    """Kafka's Admin (3.7+) describes topics with DescribeTopicPartitions: each broker must answer
    each partition's leader, epoch, replicas and ISR as etcd holds them, not itself at epoch 0."""

    async def body(sim):
        c = client(sim, "c")
        await ready_topic(sim, c, "views", partitions=3)
        for node in sorted(c.brokers):
            resp = await as_client(
                c,
                c.call(
                    c.brokers[node],
                    75,
                    0,
                    {"topics": [{"name": "views"}], "response_partition_limit": 100, "cursor": None},
                ),
            )
            (topic,) = resp.topics
            assert topic.error_code.value == 0
            for p in topic.partitions:
                st = state(sim, "views", p.partition_index)
                got = (p.error_code.value, p.leader_id, p.leader_epoch, tuple(p.replica_nodes), set(p.isr_nodes))
                want = (0, st.leader, st.leader_epoch, replicas(sim, "views", p.partition_index), set(st.isr))
                assert got == want, f"broker {node}, partition {p.partition_index}"

    simulate(body)
