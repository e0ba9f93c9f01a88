"""The registry's errors, as Confluent's REST API reports them: an HTTP status and a body
`{"error_code": N, "message": "..."}` whose code refines the status (40401 = 404 + "subject")."""

from __future__ import annotations

SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_SOFT_DELETED = 40404
SUBJECT_NOT_SOFT_DELETED = 40405
SCHEMA_VERSION_SOFT_DELETED = 40406
SCHEMA_VERSION_NOT_SOFT_DELETED = 40407
SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED = 40408
SUBJECT_LEVEL_MODE_NOT_CONFIGURED = 40409
INCOMPATIBLE_SCHEMA = 409
REFERENCE_EXISTS = 42206
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202
INVALID_COMPATIBILITY_LEVEL = 42203
INVALID_MODE = 42204
OPERATION_NOT_PERMITTED = 42205
ID_IN_USE = 42207  # IMPORT mode: the id is taken by another schema
STORE_ERROR = 50001
OPERATION_TIMEOUT = 50002
UNAUTHORIZED = 40101
FORBIDDEN = 40301  # authenticated, but an ACL refuses the operation (`access`)
FORWARDING_FAILED = 50003
UNKNOWN_LEADER = 50004  # cluster mode: not the primary, or no replica of the topic read yet


class RegistryError(Exception):
    """An answer other than success: `status` is the HTTP status, `code` Confluent's error code."""

    def __init__(self, code: int, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status if status is not None else _status_of(code)

    def body(self) -> dict[str, object]:
        return {"error_code": self.code, "message": self.message}


def _status_of(code: int) -> int:
    """The HTTP status of a Confluent error code: its first three digits (409 is itself)."""
    return code if code < 1000 else code // 100


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")


def version_not_found(subject: str, version: object) -> RegistryError:
    return RegistryError(VERSION_NOT_FOUND, f"Version {version} not found.")


def schema_not_found(detail: str = "Schema not found") -> RegistryError:
    return RegistryError(SCHEMA_NOT_FOUND, detail)


def invalid_schema(detail: str) -> RegistryError:
    return RegistryError(INVALID_SCHEMA, f"Invalid schema: {detail}")
