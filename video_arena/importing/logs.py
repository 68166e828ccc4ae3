"""Reading event logs and V_t series (CSV or JSON) into checked rows.

Event log: one row per event, in time order, with `t`, `type`, `actor`, `where` and optionally
`v_before`, `v_after` (V_t just before and just after the event), `delta`, `state` (checked against
the values, never trusted). CSV with a header line, or JSON: a list of objects, or an object whose
`events` key holds one (an answer file or a ground-truth file has that shape).

V_t series: rows `t, v` (CSV with a header `t,v`; JSON a list of `[t, v]` pairs or `{"t", "v"}`
objects, or an object whose `v_series` key holds one). It is a step function: each value holds from
its time on. docs/IMPORTING.md has the rules that turn it into each event's v_before / v_after.

Every problem is an ImportCaseError naming the file and the row (CSV: its line number, header = 1;
JSON: its 1-based position in the list).
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from video_arena.safe_io import JSONLimitError, loads_bounded, read_bounded, shown

EVENT_FIELDS = ("t", "type", "actor", "where")
OPTIONAL_FIELDS = ("v_before", "v_after", "delta", "state")
MAX_LOG_BYTES = 64 << 20


class ImportCaseError(ValueError):
    """A bad input to the importer: one line, names the file and row."""


@dataclass
class LogRow:
    label: str            # "events.csv line 4" / "gt/X.json row 3"
    t: float
    type: str
    actor: str
    where: str
    v_before: float | None = None
    v_after: float | None = None
    delta: str | None = None
    state: str | None = None


def read_input(path: Path, cap: int = MAX_LOG_BYTES) -> bytes:
    """The bytes of an input file, read with a bound: a regular file only (never through a symbolic link,
    never blocking on a FIFO, never a device such as /dev/zero), at most `cap` bytes."""
    path = Path(path)
    try:
        data, size = read_bounded(path, cap)
    except OSError as exc:
        why = ("a symbolic link (inputs are read as regular files only)" if path.is_symlink()
               else "no such file" if isinstance(exc, FileNotFoundError) else exc.strerror or str(exc))
        raise ImportCaseError(f"{path}: cannot read: {why}") from None
    if size > cap:
        raise ImportCaseError(f"{path}: {size} bytes, more than the {cap} an input may have")
    return data


def read_records(path: Path, list_key: str) -> list[tuple[str, dict[str, Any] | list[Any]]]:
    """[(row label, row)] from a CSV (dict rows) or JSON file (dicts or lists)."""
    path = Path(path)
    data = read_input(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportCaseError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    name = path.name
    if path.suffix.lower() == ".json" or text.lstrip()[:1] in ("[", "{"):
        try:
            doc = loads_bounded(text)
        except JSONLimitError as exc:
            raise ImportCaseError(f"{path}: {exc}") from None
        if isinstance(doc, dict):
            if list_key not in doc:
                raise ImportCaseError(f"{path}: a JSON object needs a {list_key!r} list")
            doc = doc[list_key]
        if not isinstance(doc, list):
            raise ImportCaseError(f"{path}: expected a JSON list of rows, got {type(doc).__name__}")
        return [(f"{name} row {i}", r) for i, r in enumerate(doc, 1)]
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not reader.fieldnames:
        raise ImportCaseError(f"{path}: empty CSV (a header line is needed)")
    header = [h.strip() for h in reader.fieldnames]
    if len(set(header)) != len(header):
        raise ImportCaseError(f"{path} line 1: duplicate column names {header}")
    reader.fieldnames = header
    out = []
    for row in reader:
        label = f"{name} line {reader.line_num}"
        if None in row:
            raise ImportCaseError(f"{label}: more fields than the header has")
        out.append((label, {k: (v.strip() if isinstance(v, str) else v) for k, v in row.items()}))
    return out


def number(label: str, field: str, value: Any, *, required: bool = True) -> float | None:
    if value is None or value == "":
        if required:
            raise ImportCaseError(f"{label}: {field!r} is missing")
        return None
    if isinstance(value, bool):
        raise ImportCaseError(f"{label}: {field!r} must be a number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ImportCaseError(f"{label}: {field!r} must be a number, got {shown(value)}") from None
    if not math.isfinite(x):
        raise ImportCaseError(f"{label}: {field!r} must be finite, got {shown(value)}")
    return x


def text_field(label: str, field: str, value: Any, *, required: bool = True) -> str | None:
    if value is None or (value == "" and field != "where"):
        if required:
            raise ImportCaseError(f"{label}: {field!r} is missing")
        return None
    if not isinstance(value, str):
        raise ImportCaseError(f"{label}: {field!r} must be a string, got {type(value).__name__}")
    return value.strip()


def read_event_log(path: Path) -> list[LogRow]:
    rows = []
    for label, r in read_records(path, "events"):
        if not isinstance(r, dict):
            raise ImportCaseError(f"{label}: an event is an object with {', '.join(EVENT_FIELDS)}")
        unknown = sorted(set(r) - set(EVENT_FIELDS) - set(OPTIONAL_FIELDS))
        if unknown:
            raise ImportCaseError(f"{label}: unknown field(s) {unknown} (known: "
                                  f"{', '.join(EVENT_FIELDS + OPTIONAL_FIELDS)})")
        rows.append(LogRow(
            label=label,
            t=number(label, "t", r.get("t")),
            type=text_field(label, "type", r.get("type")),
            actor=text_field(label, "actor", r.get("actor")),
            where=text_field(label, "where", r.get("where", None)),
            v_before=number(label, "v_before", r.get("v_before"), required=False),
            v_after=number(label, "v_after", r.get("v_after"), required=False),
            delta=text_field(label, "delta", r.get("delta"), required=False),
            state=text_field(label, "state", r.get("state"), required=False),
        ))
    if not rows:
        raise ImportCaseError(f"{path}: the log has no events")
    return rows


def read_value_series(path: Path) -> list[tuple[str, float, float]]:
    """[(label, t, v)] in file order."""
    out = []
    for label, r in read_records(path, "v_series"):
        if isinstance(r, dict):
            unknown = sorted(set(r) - {"t", "v"})
            if unknown:
                raise ImportCaseError(f"{label}: unknown field(s) {unknown} (a V_t row is t, v)")
            t, v = r.get("t"), r.get("v")
        elif isinstance(r, list) and len(r) == 2:
            t, v = r
        else:
            raise ImportCaseError(f"{label}: a V_t row is [t, v] or {{\"t\": .., \"v\": ..}}")
        out.append((label, number(label, "t", t), number(label, "v", v)))
    if not out:
        raise ImportCaseError(f"{path}: the V_t series is empty")
    return out
