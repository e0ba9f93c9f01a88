"""A minimal blocking Kafka client for the benchmarks: size-prefixed requests with header v1
(non-flexible versions only), built with tidelog's own wire codecs, read back into one buffer."""

from __future__ import annotations

import socket
import struct

from tidelog.wire import fetch, list_offsets

_I32 = struct.Struct(">i")


class RawClient:
    def __init__(self, bootstrap: str, rcvbuf: int | None = None) -> None:
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.correlation = 0
        self.buf = bytearray(1 << 16)

    def close(self) -> None:
        self.sock.close()

    def send(self, api_key: int, version: int, body_chunks) -> int:
        self.correlation += 1
        head = struct.pack(">hhih", api_key, version, self.correlation, 5) + b"bench"
        body = b"".join(bytes(c) for c in body_chunks)
        self.sock.sendall(_I32.pack(len(head) + len(body)) + head + body)
        return self.correlation

    def recv_frame(self) -> memoryview:
        """The next response frame (correlation id first), in a reused buffer."""
        size = _I32.unpack(self._exactly(4))[0]
        if len(self.buf) < size:
            self.buf = bytearray(size)
        mv = memoryview(self.buf)[:size]
        got = 0
        while got < size:
            n = self.sock.recv_into(mv[got:], size - got)
            if not n:
                raise ConnectionError("closed")
            got += n
        return mv

    def _exactly(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return out

    def list_offset(self, topic: str, partition: int, timestamp: int, version: int = 5):
        req = list_offsets.ListOffsetsRequest(
            replica_id=-1,
            topics=[
                list_offsets.ListOffsetsRequestTopic(
                    name=topic, partitions=[list_offsets.ListOffsetsRequestPartition(partition, timestamp)]
                )
            ],
        )
        self.send(2, version, list_offsets.encode_request(req, version))
        frame = self.recv_frame()
        resp = list_offsets.decode_response(frame[4:], version)
        p = resp.topics[0].partitions[0]
        return p.error_code, p.offset, p.timestamp

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int, version: int = 11) -> memoryview:
        req = fetch.FetchRequest(
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=max_bytes,
            topics=[
                fetch.FetchRequestTopic(
                    topic=topic,
                    partitions=[
                        fetch.FetchRequestPartition(
                            partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes
                        )
                    ],
                )
            ],
        )
        self.send(1, version, fetch.encode_request(req, version))
        return self.recv_frame()
