"""The send and receive queues of a loopback TCP socket, read from /proc/net/tcp: how tests see,
without timing anything, that a peer stopped reading (bytes pile up unacknowledged on one side
and unread on the other)."""

from __future__ import annotations


def tcp_queues(local_port: int, remote_port: int) -> tuple[int, int] | None:
    """(bytes sent and not yet acknowledged, bytes received and not yet read) of the loopback TCP
    socket from `local_port` to `remote_port` (None: no such socket)."""
    want = (f"0100007F:{local_port:04X}", f"0100007F:{remote_port:04X}")
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if (fields[1], fields[2]) == want:
                tx, rx = fields[4].split(":")
                return int(tx, 16), int(rx, 16)
    return None
