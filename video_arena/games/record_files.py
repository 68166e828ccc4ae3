"""What the plugins of games whose record files hold one match each (an SGF, a Gomocup .psq) share:
reading each file with the format's reader, and making one case's record of one file."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable


class OneMatchPerFile:
    """Mixin before GamePlugin: `records_from_files` reads each file with `record_readers[fmt]` (a path ->
    record function); `record_from_files` takes exactly one file and refuses, in one line naming it, a record
    the game's rules (`refusal`) do not take."""

    record_readers: dict[str, Callable[[Path], dict[str, Any]]] = {}

    def records_from_files(self, fmt: str, paths: list[Path]) -> list[dict[str, Any]]:
        if fmt not in self.record_readers:
            raise ValueError(f"{self.name} reads no {fmt!r} files, only {', '.join(sorted(self.record_readers))}")
        return [self.record_readers[fmt](Path(p)) for p in paths]

    def record_from_files(self, fmt: str, paths: list[Path]) -> dict[str, Any]:
        if len(paths) != 1:
            raise ValueError(f"one {fmt} file is one game: give one file, not {len(paths)}")
        record = self.records_from_files(fmt, paths)[0]
        why = self.refusal(record)
        if why:
            raise ValueError(f"{Path(paths[0]).name}: {why}")
        return record
