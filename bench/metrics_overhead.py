"""Cost of the metrics hooks per request: a route handler called bare vs wrapped by the metrics
service (timing + histogram), and the per-partition Produce counting (batch headers only).

    .venv/bin/python bench/metrics_overhead.py [--n 1000000]
Prints figures; asserts nothing."""

from __future__ import annotations

import argparse
import timeit

from tidelog.log.records import Record, build_batch
from tidelog.server.metrics import Metrics, records_in
from tidelog.wire import produce as codec


class _Broker:
    config = {"metrics.listener": None}
    connections: set = set()
    services: dict = {}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    n = ap.parse_args().n
    m = Metrics(_Broker())  # type: ignore[arg-type]

    def handler(ctx, request):
        return request

    timed = m._timed(3, handler)  # Metadata: timing only
    bare = timeit.timeit(lambda: handler(None, 1), number=n) / n * 1e9
    wrapped = timeit.timeit(lambda: timed(None, 1), number=n) / n * 1e9
    print(f"handler call: bare {bare:.0f} ns, with metrics {wrapped:.0f} ns (+{wrapped - bare:.0f} ns per request)")

    batch = build_batch([Record(b"k%d" % i, b"v" * 100, 1_700_000_000_000) for i in range(100)])
    data = batch * 4  # 4 batches of 100 records in one partition's record set
    k = n // 10
    per = timeit.timeit(lambda: records_in(data), number=k) / k * 1e9
    print(f"records_in over 4 batches / 400 records ({len(data)} bytes): {per:.0f} ns per partition")

    for batches in (1, 4):
        rs = batch * batches
        req = codec.ProduceRequest(
            acks=1,
            timeout_ms=1000,
            topic_data=[
                codec.ProduceRequestTopic(
                    name="t", partition_data=[codec.ProduceRequestPartition(index=p, records=rs) for p in range(10)]
                )
            ],
        )
        resp = codec.ProduceResponse(
            responses=[
                codec.ProduceResponseTopic(
                    name="t",
                    partition_responses=[codec.ProduceResponsePartition(index=p, error_code=0) for p in range(10)],
                )
            ]
        )
        per = timeit.timeit(lambda: m._count_produce(req, resp), number=k) / k * 1e9
        print(f"Produce counting, 10 partitions x {batches} batch(es) of 100 records: {per:.0f} ns per request")


if __name__ == "__main__":
    main()
