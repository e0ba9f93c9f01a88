"""Errors raised by the log engine, carrying Kafka's numeric error codes.

The server turns `error_code` straight into the partition's error code in the response; the
message goes into the response's error message (when the API version has one) and the log.
"""

from __future__ import annotations

# Kafka error codes used by the log engine (org.apache.kafka.common.protocol.Errors).
NONE = 0
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
RECORD_LIST_TOO_LARGE = 18
INVALID_TIMESTAMP = 32
POLICY_VIOLATION = 44
KAFKA_STORAGE_ERROR = 56
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87


class LogError(Exception):
    """Base class; `error_code` is a Kafka error code."""

    error_code = KAFKA_STORAGE_ERROR

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.error_code}, {self.message!r})"


class LogAppendError(LogError):
    """A produce (or coordinator write) was refused; nothing of it was written."""


class OffsetOutOfRangeError(LogError):
    """A fetch or DeleteRecords offset outside [log start offset, log end offset]."""

    def __init__(self, message: str) -> None:
        super().__init__(OFFSET_OUT_OF_RANGE, message)


class CorruptRecordError(LogError):
    """Bytes that do not parse as records (used by the pure format functions)."""

    def __init__(self, message: str) -> None:
        super().__init__(CORRUPT_MESSAGE, message)


class CorruptIndexError(Exception):
    """An index file failed its sanity check; the segment rebuilds it from the log."""
