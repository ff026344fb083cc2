"""The error a command stops with: a message for the user and the exit status.

Every command's one error style: raised anywhere below its entry point, it is turned
into the one line `hmtune COMMAND: MESSAGE` on stderr and the exit status `code` (e.g.
`hmtune advise`: 1 bad input, 2 usage) in one place, the dispatcher
(hmtune/workflows/cli.py main). A function that returns a child program's exit status
(the user's application) returns it: that is not an error."""

from __future__ import annotations


class Failure(Exception):
    """A message (str(e)) and the exit status the command ends with (e.code)."""

    def __init__(self, msg: str, code: int) -> None:
        super().__init__(msg)
        self.code = code
