"""The Protocol A condition file: one versioned JSON file = one measurement condition.

It fixes the grid, the tolerance, the generation settings (max_tokens 48000, temperature 0), the
retry schedule, the transport (ordered image parts, or one lossless 1 FPS MP4) and the request-body
cap.  Every run record carries the condition's digest (`condition_sha256`): SHA-256 of the file's
canonical JSON (sorted keys, no whitespace), so re-indenting a file does not change it but any
value does.  The versioned files live in `video_arena/core/conditions/`; `verify_cell` finds
a cell's condition there by digest (or in `<out>/_conditions/<digest>.json`, where the runner keeps
a copy of the condition file it ran; the leading underscore keeps the folder out of the scorer's
game folders).  A results folder is untrusted: a reader finds its copies through `ConditionFiles`,
which reads each file at most once per run, with a bound (MAX_CONDITION_BYTES), never through a
symbolic link (docs/SECURITY.md).

Test-only: `VA_A_RETRY_SCALE` (a float) multiplies every retry delay.  It exists so the retry tests
run in milliseconds; it never changes a request, and a run record notes any scale other than 1.
"""
from __future__ import annotations

import functools
import json
import os
import stat
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from video_arena import safe_io
from video_arena.digests import sha256_bytes
from video_arena.media.grid import GridSpec

CONDITIONS_DIR = Path(__file__).resolve().parent / "conditions"
DEFAULT_CONDITION = CONDITIONS_DIR / "video-arena-a-v1.json"
FORMAT = "video-arena-condition/1"
RETRY_SCALE_ENV = "VA_A_RETRY_SCALE"  # test-only
TRANSPORTS = ("image_parts", "mp4")
#: <out>/_conditions/<digest>.json: the runner's copy of its condition file.  A results folder's
#: subfolders starting with "_" or "." are not game folders (video_arena.scoring.scorer).
CONDITIONS_SUBDIR = "_conditions"
#: The largest condition file read (a versioned one is about 1 KiB): a larger one is refused unread.
MAX_CONDITION_BYTES = 256 * 1024


class ConditionError(ValueError):
    pass


def canonical_json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


@dataclass(frozen=True)
class Condition:
    doc: dict[str, Any]
    sha256: str
    source: str

    # -- accessors -------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return f"{self.doc['name']}-v{self.doc['version']}"

    def grid(self, jpeg_q: int | None = None, max_frames: int | None = None) -> GridSpec:
        g = self.doc["grid"]
        return GridSpec(fps=float(g["fps"]), max_frames=int(max_frames or g["max_frames"]),
                        longest_side=int(g["longest_side"]), jpeg_q=int(jpeg_q or g["jpeg_q"]))

    @property
    def tolerance_s(self) -> float:
        return float(self.doc["tolerance_s"])

    @property
    def max_tokens(self) -> int:
        return int(self.doc["generation"]["max_tokens"])

    @property
    def max_tokens_param(self) -> str:
        return self.doc["generation"].get("max_tokens_param", "max_tokens")

    @property
    def temperature(self) -> float | None:
        return self.doc["generation"].get("temperature")

    @property
    def transport(self) -> str:
        return self.doc["transport"]["kind"]

    @property
    def image_detail(self) -> str | None:
        return self.doc["transport"].get("image_detail")

    @property
    def system_prompt(self) -> str | None:
        return self.doc.get("prompt", {}).get("system_prompt")

    @property
    def request_timeout_s(self) -> float:
        return float(self.doc["request_timeout_s"])

    @property
    def body_cap_bytes(self) -> int | None:
        cap = self.doc.get("body_cap_bytes")
        return int(cap) if cap else None

    @property
    def jpeg_q_step(self) -> int:
        return int(self.doc.get("jpeg_q_fallback", {}).get("step", 1))

    @property
    def jpeg_q_max(self) -> int:
        return int(self.doc.get("jpeg_q_fallback", {}).get("max", 31))

    @property
    def max_retries(self) -> int:
        return int(self.doc["retry"]["max_retries"])

    @property
    def redraw_no_visible_answer(self) -> bool:
        return bool(self.doc["retry"].get("redraw_no_visible_answer", True))

    @staticmethod
    def retry_schedule(kind: str) -> str:
        """The retry schedule (a key of the condition's `retry`) an error of `kind` follows."""
        return "server_error_s" if kind == "server" else "rate_limit_and_timeout_s"

    def retry_delay(self, kind: str, i: int) -> float:
        """Seconds before the i-th (0-based) retry on `kind`'s own schedule ('rate_limit', 'timeout',
        'bad_reply': 1, 2, 4 s; 'server': 10, 20, 40 s); i counts that schedule's retries only."""
        sched = self.doc["retry"][self.retry_schedule(kind)]
        return float(sched[min(i, len(sched) - 1)]) * retry_scale()


def retry_scale() -> float:
    raw = os.environ.get(RETRY_SCALE_ENV, "").strip()
    if not raw:
        return 1.0
    try:
        v = float(raw)
    except ValueError as exc:
        raise ConditionError(f"${RETRY_SCALE_ENV}={raw!r} is not a number") from exc
    if v < 0:
        raise ConditionError(f"${RETRY_SCALE_ENV} must be >= 0")
    return v


def validate(doc: dict[str, Any], source: str = "<condition>") -> None:
    def need(cond: bool, msg: str):
        if not cond:
            raise ConditionError(f"{source}: {msg}")

    need(isinstance(doc, dict) and doc.get("format") == FORMAT, f"format must be {FORMAT!r}")
    need(doc.get("protocol") == "A", "protocol must be 'A'")
    for key in ("name", "version", "grid", "tolerance_s", "generation", "transport", "retry",
                "request_timeout_s"):
        need(key in doc, f"missing key {key!r}")
    g = doc["grid"]
    try:
        GridSpec(fps=float(g["fps"]), max_frames=int(g["max_frames"]),
                 longest_side=int(g["longest_side"]), jpeg_q=int(g["jpeg_q"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ConditionError(f"{source}: bad grid: {exc}") from exc
    need(float(doc["tolerance_s"]) > 0, "tolerance_s must be > 0")
    gen = doc["generation"]
    need(int(gen.get("max_tokens", 0)) > 0, "generation.max_tokens must be > 0")
    need(gen.get("max_tokens_param", "max_tokens") in ("max_tokens", "max_completion_tokens"),
         "generation.max_tokens_param must be max_tokens or max_completion_tokens")
    need(doc["transport"].get("kind") in TRANSPORTS, f"transport.kind must be one of {TRANSPORTS}")
    r = doc["retry"]
    need(int(r.get("max_retries", -1)) >= 0, "retry.max_retries must be >= 0")
    for key in ("rate_limit_and_timeout_s", "server_error_s"):
        need(isinstance(r.get(key), list) and r[key] and all(float(x) >= 0 for x in r[key]),
             f"retry.{key} must be a non-empty list of delays")
    need(float(doc["request_timeout_s"]) > 0, "request_timeout_s must be > 0")
    fb = doc.get("jpeg_q_fallback", {"step": 1, "max": 31})
    need(int(fb.get("step", 1)) >= 1 and int(g["jpeg_q"]) <= int(fb.get("max", 31)) <= 31,
         "jpeg_q_fallback: step >= 1 and jpeg_q <= max <= 31")


def condition_from_doc(doc: Any, source: str) -> Condition:
    """A condition from a document read from `source`; ConditionError when it is not a valid one (a
    document someone else wrote may hold any type anywhere: every failure is one ConditionError)."""
    try:
        validate(doc, source)
        return Condition(doc=doc, sha256=sha256_bytes(canonical_json(doc)), source=source)
    except ConditionError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
        raise ConditionError(f"{source}: not a valid condition ({type(exc).__name__}: {str(exc)[:120]})") from exc


def load_condition(path: str | os.PathLike | None = None) -> Condition:
    """The operator's condition file (`run-a --condition`; default the reference one): a link the operator
    names is followed, the file is read with a bound."""
    p = Path(path) if path else DEFAULT_CONDITION
    doc, err = safe_io.read_json_object(Path(os.path.realpath(p)), MAX_CONDITION_BYTES)
    if doc is None:
        raise ConditionError(f"cannot read condition file {p}: {err}")
    return condition_from_doc(doc, str(p))


def versioned_conditions() -> list[Path]:
    return sorted(CONDITIONS_DIR.glob("*.json"))


@functools.lru_cache(maxsize=1)
def _versioned() -> dict[str, Condition]:
    """{digest: condition} of the versioned files (the package's own, read once per process)."""
    return {c.sha256: c for c in map(load_condition, versioned_conditions())}


def is_versioned(sha256: str | None) -> bool:
    """True when a condition digest is one of the versioned files' (a reference condition): a custom
    file is not, whatever name and version it gives itself."""
    return isinstance(sha256, str) and sha256 in _versioned()


class ConditionFiles:
    """The condition files one run of a reader (score, explore, publish) finds by digest: a versioned file,
    else a results folder's copy `<dir>/<digest>.json` (run-a's `<out>/_conditions/`, the Protocol A Harbor
    agent's `agent/_conditions/`).  A copy is read at most once per run (the most recent `keep` files are
    kept: a folder of many cells sharing one condition reads it once), with a bound (MAX_CONDITION_BYTES),
    never through a symbolic link (neither the folder nor the file), never blocking on a FIFO; its
    digest must be the one it is named by."""

    def __init__(self, keep: int = 32):
        self.keep = keep
        self._read: OrderedDict[Path, tuple[Condition | None, str]] = OrderedDict()

    def find(self, sha256: Any, extra_dirs: list[Path] | tuple = ()) -> tuple[Condition | None, str]:
        """(the condition whose digest is `sha256`, '') or (None, why it was not found)."""
        if not (isinstance(sha256, str) and len(sha256) == 64 and all(c in "0123456789abcdef" for c in sha256)):
            return None, f"the condition digest {str(sha256)[:70]!r} is not a SHA-256"
        if sha256 in _versioned():
            return _versioned()[sha256], ""
        why = ""
        for d in extra_dirs:
            p = Path(d) / f"{sha256}.json"
            if p in self._read:
                self._read.move_to_end(p)
            else:
                self._read[p] = self._load(Path(d), p, sha256)
                while len(self._read) > self.keep:
                    self._read.popitem(last=False)
            cond, why_here = self._read[p]
            if cond is not None:
                return cond, ""
            why = why or why_here
        return None, why or f"condition {sha256[:12]} is not a versioned condition file"

    @staticmethod
    def _load(folder: Path, path: Path, sha256: str) -> tuple[Condition | None, str]:
        try:
            st = os.lstat(folder)
        except OSError:
            return None, ""
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            return None, f"{folder.name}/ is {'a symbolic link' if stat.S_ISLNK(st.st_mode) else 'not a folder'}: not read"
        if not os.path.lexists(path):
            return None, ""
        doc, err = safe_io.read_json_object(path, MAX_CONDITION_BYTES)
        if doc is None:
            return None, f"{folder.name}/{path.name} is {err}"
        try:
            cond = condition_from_doc(doc, str(path))
        except ConditionError as exc:
            return None, str(exc)[-200:]
        if cond.sha256 != sha256:
            return None, f"{folder.name}/{path.name} has digest {cond.sha256[:12]}, not the one it is named by"
        return cond, ""


def find_condition(sha256: str, extra_dirs: list[Path] | tuple = ()) -> Condition | None:
    """The condition whose digest is `sha256`: the versioned files first, then `extra_dirs` (each copy
    read bounded, never through a link: ConditionFiles)."""
    return ConditionFiles().find(sha256, extra_dirs)[0]
