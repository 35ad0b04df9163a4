"""The one exception type users see: a message that names the file and what is wrong."""

from __future__ import annotations

from pathlib import Path


class RecommenderError(Exception):
    """An error the user can act on (bad input, missing data); the CLI prints it without a trace."""


class InputError(RecommenderError):
    """A file or argument that cannot be used, with the place (file, line) it was found."""

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = None if path is None else Path(path)
        self.line = line
