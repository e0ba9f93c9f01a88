"""Hot-path codec timings: decoding a 1 MiB ProduceRequest, encoding a 10-partition FetchResponse.

    .venv/bin/python bench/wire_produce_decode.py [--iterations 20000]

ProduceRequest: one topic, one partition, a 1 MiB record-batch payload (opaque bytes: the codec
never looks inside records), v3 (legacy) and v9 (flexible). FetchResponse: one topic, ten
partitions, each with two 512 KiB memoryview chunks of a 10 MiB "segment" (as pread would return),
v11 and v16; also reports the number of output chunks and the bytes copied (everything that is
not a record chunk). Best of five runs, µs per call. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import os
import time
import uuid

from tidelog.wire import fetch, produce


def best_us(fn, iterations: int) -> float:
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(iterations):
            fn()
        best = min(best, time.perf_counter() - t)
    return best / iterations * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=20000)
    args = ap.parse_args()
    n = args.iterations

    payload = os.urandom(1 << 20)
    req = produce.ProduceRequest(
        -1,
        30000,
        [produce.ProduceRequestTopic("bench-topic", [produce.ProduceRequestPartition(0, payload)])],
        transactional_id=None,
    )
    for v in (3, 9):
        body = memoryview(b"".join(produce.encode_request(req, v)))
        us = best_us(lambda: produce.decode_request(body, v), n)
        print(f"ProduceRequest v{v} decode, {len(body):>9,} bytes: {us:8.2f} µs")

    segment = os.urandom(10 << 20)
    view = memoryview(segment)
    half = 512 << 10
    parts = [
        fetch.FetchResponsePartition(
            p,
            0,
            high_watermark=1_000_000,
            last_stable_offset=1_000_000,
            log_start_offset=0,
            aborted_transactions=None,
            records=[view[p * 2 * half : (p * 2 + 1) * half], view[(p * 2 + 1) * half : (p * 2 + 2) * half]],
            records_size=2 * half,
        )
        for p in range(10)
    ]
    resp = fetch.FetchResponse([fetch.FetchResponseTopic("bench-topic", parts, uuid.uuid4())], session_id=7)
    for v in (11, 16):
        chunks, size = fetch.encode_response_sized(resp, v)
        copied = size - 20 * half
        us = best_us(lambda: fetch.encode_response_sized(resp, v), n)
        print(
            f"FetchResponse v{v} encode, 10 partitions, {size:>9,} bytes in {len(chunks)} chunks "
            f"({copied} bytes copied): {us:8.2f} µs"
        )


if __name__ == "__main__":
    main()
