"""The registry's settings as the broker's configuration reads them."""

from __future__ import annotations

import pytest

from tidelog.core.config import ConfigError, load_config


def test_the_listener_setting_is_one_http_url():
    assert load_config(None, ["schema.registry.listeners=http://[::1]:8081"])["schema.registry.listeners"]
    assert load_config(None, [])["schema.registry.listeners"] is None  # off by default
    assert load_config(None, ["schema.registry.listeners=https://h:8081"])["schema.registry.listeners"]
    for bad in ("ftp://h:8081", "http://h", "h:8081", "http://h:8081,http://g:8082"):
        with pytest.raises(ConfigError):
            load_config(None, [f"schema.registry.listeners={bad}"])
