import subprocess
import sys

import pytest

from tidelog.core.config import ConfigError, load_config


def test_defaults_and_overrides(tmp_path):
    props = tmp_path / "server.properties"
    props.write_text("# comment\nnum.partitions=4\nlog.retention.hours=1\n")
    cfg = load_config(props, ["listeners=PLAINTEXT://127.0.0.1:9999", "log.dirs=/x"])
    assert cfg["num.partitions"] == 4
    assert cfg.listeners[0].port == 9999
    assert cfg.topic_defaults()["retention.ms"] == "3600000"
    assert str(cfg.log_dirs[0]) == "/x"


@pytest.mark.parametrize(
    "override,needle",
    [
        ("num.partitions=zero", "num.partitions"),
        ("listeners=nowhere", "listeners"),
        ("log.message.timestamp.type=Tomorrow", "log.message.timestamp.type"),
        ("auto.create.topics.enable=maybe", "auto.create.topics.enable"),
    ],
)
def test_invalid_values_refused(override, needle):
    with pytest.raises(ConfigError, match=needle):
        load_config(None, [override])


def test_serve_refuses_invalid_config_with_clear_message(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tidelog",
            "serve",
            "--override",
            "message.max.bytes=-5",
            "--override",
            f"log.dirs={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 2
    assert "message.max.bytes" in out.stderr


def test_unknown_key_warned(caplog):
    load_config(None, ["no.such.key=1"])
    assert "unknown config key 'no.such.key'" in caplog.text
