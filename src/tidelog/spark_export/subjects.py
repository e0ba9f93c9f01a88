"""Which registry subjects a typed column's schemas come from: Confluent's subject name strategies.

A producer's serializer registers (and looks up) the schema of a value under a subject its
`subject.name.strategy` names:

- `topic` (TopicNameStrategy, the default): `<topic>-value` (`<topic>-key`);
- `record` (RecordNameStrategy): the record's full name (`shop.Order`: Avro's namespace and
  name, Protobuf's package and message, a JSON Schema's `title`). Nothing ties such a subject
  to a topic, so the export cannot find it: `--value-subject NAME` (repeatable; the data
  source's `valueSubjects`, comma-separated) names them;
- `topic-record` (TopicRecordNameStrategy): `<topic>-<full name>`, found by its prefix: every
  subject `<topic>-X` whose X is a dotted name (letters, digits, `_`) other than `key` and
  `value`. Keys and values share this naming, so with typed keys and values both under it the
  subjects must be named (`--key-subject`, `--value-subject`).

Explicit subjects win over the strategy. The column's type is then the union of every version of
every chosen subject, by field name (`arrow_types.merge`): a topic that carries unrelated record
types gets ONE struct holding all their fields, each row filling those of its own type (a field
two types give incompatible types stops the run). A Protobuf schema file registered under a
record subject contributes the message that subject names.

`Naming` is recorded in the column's manifest entry (`strategy`, `subjects`, only when not the
default) so that a later run without the options uses the table's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

STRATEGIES = ("topic", "record", "topic-record")
_RECORD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


class NoSubjects(ValueError):
    """The column's subjects cannot be known (RecordNameStrategy without named subjects)."""


@dataclass(frozen=True)
class Naming:
    strategy: str = "topic"
    subjects: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown subject name strategy {self.strategy!r} (one of {', '.join(STRATEGIES)})")

    @classmethod
    def of(cls, strategy: str | None, subjects: Iterable[str] | None) -> Naming | None:
        """The naming options ask for; None when they ask for none (the table's, or the default)."""
        subjects = tuple(s for s in subjects or () if s)
        if strategy is None and not subjects:
            return None
        return cls(strategy or "topic", subjects)

    @classmethod
    def recorded(cls, entry: dict) -> Naming:
        return cls(entry.get("strategy", "topic"), tuple(entry.get("subjects", ())))

    def to_entry(self) -> dict:
        out: dict = {}
        if self.strategy != "topic":
            out["strategy"] = self.strategy
        if self.subjects:
            out["subjects"] = list(self.subjects)
        return out

    @property
    def lists_subjects(self) -> bool:
        """Whether the subjects are found among all the registry's subjects (by prefix)."""
        return self.strategy == "topic-record" and not self.subjects

    def known(self, topic: str, column: str) -> list[str]:
        """The subjects named without looking at the registry."""
        if self.subjects:
            return list(self.subjects)
        return [f"{topic}-{column}"] if self.strategy == "topic" else []

    def choose(self, topic: str, column: str, registered: Iterable[str]) -> list[str]:
        """The column's subjects, given the registry's subjects (`registered`); NoSubjects when
        RecordNameStrategy's cannot be known."""
        if self.subjects or self.strategy == "topic":
            return self.known(topic, column)
        if self.strategy == "record":
            raise NoSubjects(
                f"{topic}: RecordNameStrategy subjects are the records' full names, which the topic does "
                f"not tell: name them with --{column}-subject (option {column}Subjects)"
            )
        prefix = f"{topic}-"
        return sorted(
            s
            for s in registered
            if s.startswith(prefix)
            and s[len(prefix) :] not in ("key", "value")
            and _RECORD_NAME.fullmatch(s[len(prefix) :])
        )

    @staticmethod
    def record_names(topic: str, subject: str) -> tuple[str, ...]:
        """The record names a subject may be (RecordNameStrategy's subject, or TopicRecordNameStrategy's
        without `<topic>-`): a Protobuf file registered under it contributes that message."""
        prefix = f"{topic}-"
        return (subject, subject[len(prefix) :]) if subject.startswith(prefix) else (subject,)
