"""socket.receive.buffer.bytes sets SO_RCVBUF on client connections (-1 leaves the OS's)."""

import asyncio
import socket
from pathlib import Path

from tidelog.core.config import load_config
from tidelog.server.broker import Broker


def _rcvbuf_of_accepted(tmp_path, overrides):
    async def run():
        broker = Broker(load_config(None, [f"log.dirs={tmp_path}", "listeners=PLAINTEXT://127.0.0.1:0", *overrides]))
        await broker.start()
        try:
            _r, w = await asyncio.open_connection("127.0.0.1", broker.bound_port())
            for _ in range(100):
                if broker.connections:
                    break
                await asyncio.sleep(0.01)
            conn = next(iter(broker.connections))
            value = conn.transport.get_extra_info("socket").getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
            w.close()
            return value
        finally:
            await broker.stop()

    return asyncio.run(run())


def test_receive_buffer_default_and_os_choice(tmp_path):
    rmem_max = int(Path("/proc/sys/net/core/rmem_max").read_text())
    # Kafka's default, 100 KiB (Linux reports double what was set, capped by rmem_max)
    default = _rcvbuf_of_accepted(tmp_path / "a", [])
    assert min(102400, rmem_max) <= default <= 2 * 102400
    big = _rcvbuf_of_accepted(tmp_path / "b", ["socket.receive.buffer.bytes=1048576"])
    assert big >= min(1 << 20, rmem_max) and big > default
