"""Errors lorescan raises for bad input: one line naming the file, the entry and the field."""

from __future__ import annotations

import json


class LorescanError(Exception):
    """Input lorescan cannot read or use. ``str()`` gives the one-line message the CLI prints."""

    def __init__(self, message: str, *, file: str | None = None, uid: object = None,
                 field: str | None = None) -> None:
        self.message = message
        self.file = file
        self.uid = uid
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(str(self.file))
        if self.uid is not None:
            uid = self.uid        # as the book writes it: true, [1], "a b" (a plain string or integer as it is)
            shown = uid if type(uid) in (str, int) else json.dumps(uid, ensure_ascii=False, default=str)
            where.append(f"entry {shown}")
        if self.field:
            where.append(f"field {self.field!r}")
        prefix = ": ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message

    def with_file(self, file: str) -> LorescanError:
        """The same error, naming ``file`` when it did not already."""
        if self.file is None:
            self.file = file
            self.args = (self.__str__(),)
        return self


class FormatError(LorescanError):
    """A file whose format is unknown, unsupported or broken."""


class ScenarioError(LorescanError):
    """A conformance scenario file that cannot be run."""
