"""KIP-951 leader discovery hints, as the raw tagged-field values the hot-path codecs carry
(`tagged_fields: dict[int, bytes]`): a partition answered NOT_LEADER_OR_FOLLOWER or
FENCED_LEADER_EPOCH names the current leader, and the response lists that leader's endpoint, so a
client can move without a Metadata round trip.

Where they go (tag numbers are the protocol's):

    Produce v10+   partition tag 0: current_leader      response tag 0: node_endpoints
    Fetch v12+     partition tag 1: current_leader      response tag 0: node_endpoints (v16+)

    current_leader  leader_id int32, leader_epoch int32, tagged fields
    node_endpoints  compact array of: node_id int32, host compact string, port int32,
                    rack compact nullable string, tagged fields
"""

from __future__ import annotations

import struct

from .primitives import encode_uvarint

PRODUCE_CURRENT_LEADER_TAG = 0
FETCH_CURRENT_LEADER_TAG = 1
NODE_ENDPOINTS_TAG = 0
PRODUCE_FIRST_VERSION = 10
FETCH_FIRST_VERSION = 12
FETCH_ENDPOINTS_FIRST_VERSION = 16

_LEADER = struct.Struct(">ii")
_INT32 = struct.Struct(">i")


def current_leader(leader_id: int, leader_epoch: int) -> bytes:
    return _LEADER.pack(leader_id, leader_epoch) + b"\x00"


def _compact_string(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    b = s.encode()
    return encode_uvarint(len(b) + 1) + b


def node_endpoints(nodes: list[tuple[int, str, int, str | None]]) -> bytes:
    """[(node_id, host, port, rack)]."""
    out = [encode_uvarint(len(nodes) + 1)]
    for node_id, host, port, rack in nodes:
        out += [_INT32.pack(node_id), _compact_string(host), _INT32.pack(port), _compact_string(rack), b"\x00"]
    return b"".join(out)
