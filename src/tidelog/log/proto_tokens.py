"""The tokens of .proto text, and a cursor over them: the shared front end of the two small
.proto readers, the schema registry's (`registry.protobuf`: what compatibility checks need) and
the Spark export's (`spark_export.proto_text`: a `FileDescriptorProto` to decode with). It sits in
log/ beside the registry's record formats (`schema_records`) so that both may use it.

A token is a quoted string (kept with its quotes), a run of identifier characters (names, dotted
names, numbers with signs and exponents), or one punctuation character of `{}[]<>()=;,:`.
Whitespace and `//` and `/* */` comments are dropped. The cursor raises IndexError past the last
token (the readers report it as text that ends inside a definition).
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r'\s+|//[^\n]*|/\*.*?\*/|("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[A-Za-z0-9_.+-]+|[{}\[\]<>()=;,:])', re.S
)


def tokenize(text: str) -> list[str]:
    return [m.group(1) for m in _TOKEN.finditer(text) if m.group(1)]


class TokenCursor:
    """Reads `tokens` in order; `i` is the next one's index (readers may step back with `i -= 1`)."""

    def __init__(self, tokens: list[str]) -> None:
        self.t, self.i = tokens, 0

    def next(self) -> str:
        tok = self.t[self.i]
        self.i += 1
        return tok

    def peek(self) -> str:
        return self.t[self.i]

    def expect(self, tok: str) -> None:
        got = self.next()
        if got != tok:
            raise ValueError(f"expected {tok!r}, found {got!r}")

    def skip_statement(self) -> None:
        """Past the `;` ending this statement, or past its `{...}` block."""
        depth = 0
        while True:
            tok = self.next()
            depth += tok == "{"
            depth -= tok == "}"
            if depth == 0 and tok in (";", "}"):
                return
