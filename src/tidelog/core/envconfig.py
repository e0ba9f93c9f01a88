"""Broker properties from environment variables, named as common Kafka container images name them.

With `tidelog serve --env-prefix KAFKA_`, every variable `KAFKA_<NAME>` becomes the property whose
name is `<NAME>` lower-cased with `_` read as `.`, `__` as `_` and `___` as `-`:
`KAFKA_LOG_DIRS` -> `log.dirs`, `KAFKA_METRICS_LISTENER` -> `metrics.listener`,
`KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS` -> `offsets.topic.num.partitions`. Precedence: the config file,
then the environment, then `--override`.
"""

from __future__ import annotations

from collections.abc import Mapping


def env_to_property(name: str) -> str:
    out, i = [], 0
    while i < len(name):
        if name.startswith("___", i):
            out.append("-")
            i += 3
        elif name.startswith("__", i):
            out.append("_")
            i += 2
        elif name[i] == "_":
            out.append(".")
            i += 1
        else:
            out.append(name[i].lower())
            i += 1
    return "".join(out)


def env_overrides(environ: Mapping[str, str], prefix: str) -> list[str]:
    """`key=value` items (sorted by variable name) for the variables starting with `prefix`."""
    items = []
    for var in sorted(environ):
        if var.startswith(prefix) and len(var) > len(prefix):
            items.append(f"{env_to_property(var[len(prefix) :])}={environ[var]}")
    return items
