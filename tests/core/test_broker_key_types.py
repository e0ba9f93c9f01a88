"""Every broker key has its Kafka config type and a line of documentation (DescribeConfigs
answers both), so a new key cannot ship without them (tests/interop/test_config_types.py checks
the types against Kafka's over the wire)."""

from tidelog.core.config import BROKER_KEYS
from tidelog.core.config_types import BROKER_TYPES, DOCS


def test_every_broker_key_has_a_type_and_documentation():
    assert sorted(set(BROKER_KEYS) - set(BROKER_TYPES)) == []
    assert sorted(set(BROKER_KEYS) - set(DOCS)) == []
