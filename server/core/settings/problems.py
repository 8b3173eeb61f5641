"""A configuration file's problems, all of them at once: each table is read on when one of its
values is wrong, and what was wrong is said in one line at the end (the server stops with one
line: docs/protocol.md, Configuration)."""

from __future__ import annotations

from types import TracebackType

from ..errors import ConfigError


class Problems:
    def __init__(self) -> None:
        self.found: list[str] = []

    def collect(self) -> Collecting:
        """Read a part of the file: a ``ConfigError`` in it is noted, and reading goes on after it."""
        return Collecting(self.found)

    def check(self) -> None:
        """Stop, naming every problem noted, when there is any."""
        if len(self.found) == 1:
            raise ConfigError(self.found[0])
        if self.found:
            raise ConfigError(f"{len(self.found)} problems: " + "; ".join(self.found), self.found)


class Collecting:
    """The ``with`` block of ``Problems.collect`` (a class, not a generator: the core is compiled)."""

    def __init__(self, found: list[str]) -> None:
        self.found = found

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool:
        if isinstance(error, ConfigError):
            # Each problem it says, not the error as one: the count is of the list that is said.
            self.found.extend(error.problems)
            return True  # noted: reading goes on
        return False
