"""Kafka's feature flags (KIP-584) as tidelog serves them in ApiVersions.

Kafka finalizes feature levels in its KRaft metadata (`kafka-storage format --feature`,
`kafka-features upgrade`); its brokers advertise the levels they support (SupportedFeatures) and
the finalized ones with the metadata offset that set them (FinalizedFeatures,
FinalizedFeaturesEpoch). Clients read them: the Java producer runs transaction version 2 (KIP-890
part 2) only when `transaction.version` is finalized at 2 or more.

tidelog has no metadata quorum of its own; it advertises only the features it implements:
`transaction.version` (levels 0-2), finalized at the broker's `transaction.version` setting
(default 2, as a new Kafka 4.x cluster). The epoch is the time the broker started, in
milliseconds: it only grows, so a client that reconnects after a restart with another setting
takes the new level (clients keep the features of the highest epoch they have seen). Every
broker of a cluster should have the same setting.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import BrokerConfig

TRANSACTION_VERSION = "transaction.version"


@dataclass(frozen=True, slots=True)
class Features:
    supported: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (min, max) level
    finalized: dict[str, int] = field(default_factory=dict)  # name -> level
    epoch: int = -1

    @classmethod
    def of(cls, config: BrokerConfig, now_ms: int | None = None) -> Features:
        return cls(
            {TRANSACTION_VERSION: (0, 2)},
            {TRANSACTION_VERSION: int(config["transaction.version"])},
            int(time.time() * 1000) if now_ms is None else now_ms,
        )
