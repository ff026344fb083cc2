"""The error a command stops with: a message for the user and the exit status.

Raised anywhere below a command's entry point; the entry point prints
`hmtune COMMAND: MESSAGE` on stderr and returns `code` (e.g. `hmtune advise`: 1 bad
input, 2 usage)."""

from __future__ import annotations


class Failure(Exception):
    """A message (str(e)) and the exit status the command ends with (e.code)."""

    def __init__(self, msg: str, code: int) -> None:
        super().__init__(msg)
        self.code = code
