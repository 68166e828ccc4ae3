"""The results contract: where a cell's files are, its run record and whether it ran (the bounded reads
and atomic writes it uses are video_arena/safe_io.py's).  Every runner writes a cell only
through this module and every reader (the scorer, the explorer, oracle-check, the baselines) reads one
only through it (docs/ARCHITECTURE.md, "Results folder").  A Harbor job's trial folders are Harbor's
layout: video_arena/harbor_api/trials.py reads them (a Protocol A trial's agent/ is a cell folder of
this contract).

    <out>/<game>/<case_id>/answer.json    the answer (Protocol B: the sandbox's answer.json or the seed)
    <out>/<game>/<case_id>/run.json       the run record: `RunRecord` (common keys + protocol extras)
    <out>/<game>/<case_id>/...            logs, prompt.txt, reply.txt, receipt.json (PROMPT_FILE, ...)

`cell_status` is the one rule for "did this cell run": a cell with no folder, no run.json, an
unreadable run.json or `stop_reason` `harness_error` (or none) never ran: it is re-run on resume and
is missing in a table, never 0.0.  Every other cell ran; what it left is the scorer's business.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from video_arena.core.tasks import GAME_VERSION_KEY, MAX_GAME_VERSION
from video_arena.safe_io import finite_number, read_json_object, whole_number, write_bytes_atomic, write_json_atomic

RUN_FILE = "run.json"
ANSWER_FILE = "answer.json"
#: The prompt a runner delivered: Protocol A's text part of the request, Protocol B's turn-1 prompt (the
#: sandbox's prompt.txt, copied into the cell)
PROMPT_FILE = "prompt.txt"
#: Protocol A's own files of a cell (run-a's, and the Protocol A Harbor agent's agent/ folder): the visible
#: reply byte for byte, a reasoning channel (only when the endpoint returns one), the media receipt
REPLY_FILE = "reply.txt"
REASONING_FILE = "reasoning.txt"
RECEIPT_FILE = "receipt.json"
#: receipt.json's `format` key: media digest, grid, video_ts, every still's SHA-256 and size, request digest
RECEIPT_FORMAT = "video-arena-a-receipt/1"
#: run.json's `format` key, its first: the run record's contract and its version.  A record without the key
#: was written before it existed and is read as version 1 (the same keys); a record naming another format
#: is not read (`read_run`: unreadable, so an answer beside it is an integrity error, never a score).
RUN_FORMAT = "video-arena-run/1"
FORMAT_KEY = "format"

#: stop_reason of a cell whose agent or request never ran: missing, never 0.0
HARNESS_ERROR = "harness_error"
#: Answer states of a run that ran and left no answer (scored 0.0, counted as 0-row).  `no_artifact`:
#: a Harbor trial with a valid reward but no collected artifacts/app/answer.json.
NO_ANSWER_STATES = ("never_wrote", "deleted", "too_large", "no_answer", "no_artifact")
ANSWER_STATES = ("wrote", "never_wrote", "deleted", "too_large", "answered", "no_answer", "no_artifact")


# --------------------------------------------------------------------------------------------------
# the cell folder
# --------------------------------------------------------------------------------------------------
def cell_dir(out: str | os.PathLike, game: str, case_id: str) -> Path:
    return Path(out) / game / case_id


#: A cell's earlier attempts: <cell>/attempts/<n>/ holds attempt n's files as it left them.
ATTEMPTS_DIR = "attempts"


@dataclass
class Attempt:
    """The attempt a runner is starting: its number (1 for a first run) and what the earlier ones were."""
    n: int
    previous: list[dict[str, Any]] = field(default_factory=list)

    def record_keys(self) -> dict[str, Any]:
        """The run.json keys of the attempt history (docs/PROTOCOLS.md, "Attempts")."""
        return {"attempt": self.n, "previous_attempts": self.previous}


def _attempt_summary(n: int, folder: Path) -> dict[str, Any]:
    rec, err = read_run(folder)
    if rec is None and os.path.lexists(folder / ANSWER_FILE):
        # A runner writes answer.json only once the agent or the request ran (a harness error leaves
        # none): this attempt ran and its record was lost or damaged.  Running the cell again re-draws it.
        return {"attempt": n, "stop_reason": None, "ran": True,
                "note": f"{err or 'no run.json'}, but an {ANSWER_FILE}: the attempt ran, its record was lost"}
    if rec is None:
        return {"attempt": n, "stop_reason": None, "ran": False, "note": err or "no run.json"}
    return {"attempt": n, "stop_reason": rec.stop_reason, "answer_state": rec.answer_state, "ran": rec.ran,
            "answer_sha256": rec.answer_sha256, "finished_at": rec.finished_at}


def start_attempt(cdir: str | os.PathLike, run_files: tuple[str, ...]) -> Attempt:
    """Before a (re-)run of a cell: move the files an earlier run left in the cell folder (`run_files`:
    the runner's own names, run.json and answer.json among them) into `attempts/<n>/` (nothing is
    deleted), and return the new attempt's number with a summary of every earlier one.  A first run of
    a cell is attempt 1 with no history; files the runner does not own are left where they are."""
    cdir = Path(cdir)
    cdir.mkdir(parents=True, exist_ok=True)
    hist = cdir / ATTEMPTS_DIR
    earlier = sorted((int(p.name), p) for p in hist.iterdir() if p.is_dir() and p.name.isdigit()) \
        if hist.is_dir() else []
    left = [cdir / name for name in dict.fromkeys((RUN_FILE, ANSWER_FILE, *run_files))
            if os.path.lexists(cdir / name)]
    # The record being moved names its own number and history: kept even when attempts/ was emptied
    # (a re-draw must never disappear from the next record because its folder did).
    cur = read_run(cdir)[0] if left else None
    cur_n = cur.protocol_extras.attempt if cur is not None else None
    cur_n = cur_n if isinstance(cur_n, int) and not isinstance(cur_n, bool) and cur_n > 0 else 0
    recorded = cur.protocol_extras.previous_attempts if cur is not None else None
    recorded = {p["attempt"]: p for p in recorded if isinstance(p, dict) and isinstance(p.get("attempt"), int)
                and not isinstance(p.get("attempt"), bool)} if isinstance(recorded, list) else {}
    if left:
        n_prev = max((earlier[-1][0] if earlier else 0) + 1, cur_n, max(recorded, default=0) + 1)
        dest = hist / str(n_prev)
        dest.mkdir(parents=True)
        for p in left:
            os.replace(p, dest / p.name)
        earlier.append((n_prev, dest))
    kept = {n for n, _ in earlier}
    previous = sorted([_attempt_summary(n, p) for n, p in earlier]
                      + [dict(p, files="not kept") for n, p in recorded.items() if n not in kept],
                      key=lambda p: p["attempt"])
    return Attempt(n=(previous[-1]["attempt"] + 1) if previous else 1, previous=previous)


def redraws_of(record: RunRecord) -> list[dict[str, Any]]:
    """The earlier attempts of a cell that ran (not harness errors; an attempt that left an answer but
    lost its record ran too): each one is a re-draw."""
    prev = record.protocol_extras.previous_attempts
    if not isinstance(prev, list):
        return []
    return [p for p in prev if isinstance(p, dict)
            and (p.get("stop_reason") not in (None, HARNESS_ERROR) or p.get("ran") is True)]


_SECRET_RE = re.compile(r"(?i)((?:key|token|secret|password|passwd|auth)[\w-]*\s*[=:]\s*)(\S+)")


def redact(command: str) -> str:
    """A command as a run record holds it (and a reader shows it): the values of KEY=/TOKEN=/...
    assignments masked."""
    return _SECRET_RE.sub(lambda m: m.group(1) + "***", command)


def write_answer(cdir: Path, answer: dict[str, Any] | bytes) -> Path:
    """The cell's answer.json: a document (written as JSON) or the exact bytes collected."""
    path = Path(cdir) / ANSWER_FILE
    if isinstance(answer, bytes):
        write_bytes_atomic(path, answer)
    else:
        write_json_atomic(path, answer)
    return path


# --------------------------------------------------------------------------------------------------
# the run record
# --------------------------------------------------------------------------------------------------
def _str_or_none(v: Any) -> str | None:
    return None if v is None else str(v)


#: The largest count a record's `n_rows` may name and the longest wall time (seconds, a year) a record's
#: `wall_s` may: a number outside is read as not recorded (a 401-digit integer is a valid JSON number no
#: float holds).
MAX_COUNT = 10 ** 9
MAX_WALL_S = 366 * 24 * 3600.0


def _count_or_none(v: Any) -> int | None:
    return whole_number(v, 0, MAX_COUNT)


def _seconds_or_none(v: Any) -> float | None:
    return finite_number(v, 0.0, MAX_WALL_S)


def _sha_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _version_or_none(v: Any) -> int | None:
    return whole_number(v, 1, MAX_GAME_VERSION)


#: The common keys and how a reader takes each from a document it did not write (run.json is data: a
#: value of the wrong type, or a number outside its range, is read as "not recorded", or as its text for
#: the free-text keys).
_READERS = {
    "protocol": _str_or_none, "model": _str_or_none, "game": _str_or_none, "case_id": _str_or_none,
    GAME_VERSION_KEY: _version_or_none,
    "stop_reason": _str_or_none, "answer_state": _str_or_none, "n_rows": _count_or_none,
    "wall_s": _seconds_or_none,
    "instruction_sha256": _sha_or_none, "answer_sha256": _sha_or_none, "started_at": _str_or_none,
    "finished_at": _str_or_none,
}
COMMON_KEYS = tuple(_READERS)


@dataclass
class RunRecord:
    """One cell's run.json.  The common keys are typed fields; everything a protocol adds (docs/
    PROTOCOLS.md lists them: condition, sampling, audit, isolation, ...) is in `extras`.

    `stop_reason` `harness_error` = never ran (missing); `answer_state` is `wrote|never_wrote|deleted|
    too_large` for Protocol B, `answered|no_answer` for Protocol A; `answer_sha256` is the SHA-256 of
    the answer.json the run left (None when it left none to check)."""

    protocol: str | None
    model: str | None = None
    game: str | None = None
    case_id: str | None = None
    #: the version of the game's definition the cell ran under (game.toml `version`; None: not recorded)
    game_version: int | None = None
    stop_reason: str | None = None
    answer_state: str | None = None
    n_rows: int | None = None
    wall_s: float | None = None
    instruction_sha256: str | None = None
    answer_sha256: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    #: the document as read (None for a record built in memory): readers that check what a file says
    #: about itself (its game and case, a key present with null) look here
    source: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "RunRecord":
        """A record from a run.json document; never raises on a dict (wrong types read as above)."""
        common = {k: f(doc.get(k)) for k, f in _READERS.items()}
        extras = {k: v for k, v in doc.items() if k not in _READERS and k != FORMAT_KEY}
        return cls(**common, extras=extras, source=doc)

    @classmethod
    def build(cls, doc: dict[str, Any]) -> "RunRecord":
        """A record a runner is about to write, from the dict it assembled: the common keys must have
        their types (a wrong one is the runner's bug: TypeError)."""
        for k, reader in _READERS.items():
            v = doc.get(k)
            if v is not None and reader(v) != v:
                raise TypeError(f"run record key {k!r}: {v!r} has the wrong type")
        if doc.get(FORMAT_KEY, RUN_FORMAT) != RUN_FORMAT:
            raise TypeError(f"run record {FORMAT_KEY} {doc[FORMAT_KEY]!r}: this toolkit writes {RUN_FORMAT}")
        return cls(**{k: doc.get(k) for k in _READERS},
                   extras={k: v for k, v in doc.items() if k not in _READERS and k != FORMAT_KEY})

    def get(self, key: str, default: Any = None) -> Any:
        """Any key, common or extra, by its run.json name."""
        if key in _READERS:
            v = getattr(self, key)
            return default if v is None else v
        return self.extras.get(key, default)

    def to_doc(self) -> dict[str, Any]:
        """The run.json document: its format, the common keys, then the protocol's own."""
        doc = {FORMAT_KEY: RUN_FORMAT, **{k: getattr(self, k) for k in _READERS}}
        doc.update(self.extras)
        return doc

    def as_read(self) -> dict[str, Any]:
        """The document as it was read (or as it would be written)."""
        return self.source if self.source is not None else self.to_doc()

    def names_other_cell(self, game: str, case_id: str) -> str:
        """'' when the record's game and case (where it names them) are the folder's, else why not."""
        doc = self.as_read()
        for key, expected in (("game", game), ("case_id", case_id)):
            if key in doc and doc[key] != expected:
                return f"run.json names {key} {doc[key]!r}, its folder is {expected!r}"
        return ""

    @property
    def ran(self) -> bool:
        return self.stop_reason not in (None, HARNESS_ERROR)

    @property
    def protocol_a(self) -> "ProtocolARecord":
        """The record's extras read as Protocol A's keys (any record: a key it does not hold is UNSET)."""
        return ProtocolARecord.from_doc(self.extras)

    @property
    def protocol_b(self) -> "ProtocolBRecord":
        """The record's extras read as Protocol B's keys (any record: a key it does not hold is UNSET)."""
        return ProtocolBRecord.from_doc(self.extras)

    @property
    def protocol_extras(self) -> "ProtocolARecord | ProtocolBRecord":
        """The record's extras read as its own protocol's keys (Protocol A's for a record naming no
        protocol): for the keys both protocols write, such as the attempt history."""
        return self.protocol_b if self.protocol == "B" else self.protocol_a


# --------------------------------------------------------------------------------------------------
# the protocols' own keys
# --------------------------------------------------------------------------------------------------
#: The reasoning effort's name: a run record's key (`ProtocolARecord`, `ProtocolBRecord`), the scorer's
#: column and mixing dimension, an agent command template's placeholder (`{reasoning_effort}`) and the
#: request parameter the run record's `request_params` names (video_arena/core/request.py).
REASONING_EFFORT = "reasoning_effort"


class _Unset:
    """The value of a protocol key a record does not hold: absent from run.json, which is not null."""
    _instance: "_Unset | None" = None

    def __new__(cls) -> "_Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def or_none(value: Any) -> Any:
    """A protocol key's value as a reader that does not tell absent from null takes it."""
    return None if value is UNSET else value


@dataclass
class ProtocolExtras:
    """A protocol's own run.json keys (beside `RunRecord`'s common ones), one field each in the order a
    runner writes them.  A field left `UNSET` is not written; read from a document, a field is the value
    as recorded (run.json is data: the reader checks its type) or `UNSET` when the key is absent."""

    def to_doc(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not UNSET}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]):
        return cls(**{f.name: doc[f.name] for f in fields(cls) if f.name in doc})

    def recorded(self, value: Any) -> bool:
        """Whether a value read from this record was there (`UNSET`: the key is absent)."""
        return value is not UNSET


@dataclass
class ProtocolARecord(ProtocolExtras):
    """Protocol A's keys (video_arena/protocol_a/request_cell.py; docs/PROTOCOLS.md lists them)."""
    runner: str = UNSET
    condition: str = UNSET
    condition_sha256: str = UNSET
    tolerance_s: float = UNSET
    transport: str = UNSET
    request_timeout_s: float = UNSET
    reasoning_effort: str | None = UNSET
    enable_thinking: bool | None = UNSET
    request_params: dict[str, Any] = UNSET
    on_overflow: str = UNSET
    toolkit: dict[str, Any] = UNSET
    attempt: int = UNSET
    previous_attempts: list[dict[str, Any]] = UNSET
    retry_scale: float = UNSET
    error: str = UNSET
    finish_reason: str | None = UNSET
    n_json_blocks: int = UNSET
    frames_used: int = UNSET
    fps_eff: float = UNSET
    t1_recall_ceiling: float = UNSET
    duration_s: float = UNSET
    served_model: str | None = UNSET
    usage: dict[str, Any] | None = UNSET
    request_sha256: str = UNSET
    body_bytes: int = UNSET
    protocol_complete: bool = UNSET
    degraded: bool = UNSET
    degradations: list[dict[str, Any]] = UNSET
    sampling: dict[str, Any] = UNSET
    attempts: list[dict[str, Any]] = UNSET
    n_attempts: int = UNSET
    reply_lone_surrogates_replaced: int = UNSET


@dataclass
class ProtocolBRecord(ProtocolExtras):
    """Protocol B's keys (video_arena/protocol_b/agent_cell.py; docs/PROTOCOLS.md lists them)."""
    exit_code: int | None = UNSET
    kill_to_gone_s: float | None = UNSET
    turns_used: int | None = UNSET
    max_turns: int = UNSET
    timeout_min: float = UNSET
    prompt_sha256: str | None = UNSET
    seed_sha256: str | None = UNSET
    sandbox: str | None = UNSET
    audit: dict[str, Any] | None = UNSET
    reasoning_effort: str | None = UNSET
    isolation: dict[str, Any] = UNSET
    agent_cmd: str = UNSET
    runner: str = UNSET
    toolkit: dict[str, Any] = UNSET
    preflight: dict[str, Any] = UNSET
    logs: dict[str, str] = UNSET
    attempt: int = UNSET
    previous_attempts: list[dict[str, Any]] = UNSET
    prompt_template_sha256: str = UNSET
    command: str = UNSET
    env_scrubbed: list[str] = UNSET
    answer_history: list[dict[str, Any]] = UNSET
    answer_history_truncated: bool = UNSET
    logs_bytes: dict[str, int] = UNSET
    logs_cap_bytes: int = UNSET
    logs_truncated: dict[str, int] | None = UNSET
    error: str = UNSET
    agent_started: bool = UNSET
    kill: dict[str, Any] | None = UNSET
    answer_note: str = UNSET
    turns_used_note: str = UNSET
    sandbox_kept: bool = UNSET
    sandbox_removed: bool | None = UNSET
    sandbox_note: str = UNSET


@dataclass
class HarborAgentMetadata:
    """What the Protocol A Harbor agent reports to Harbor as its context metadata: these keys of its run
    record, each null when the record has none (video_arena/protocol_a/harbor_agent.py)."""
    stop_reason: str | None = None
    answer_state: str | None = None
    n_rows: int | None = None
    n_json_blocks: int | None = None
    frames_used: int | None = None
    fps_eff: float | None = None
    t1_recall_ceiling: float | None = None
    protocol_complete: bool | None = None
    degradations: list[dict[str, Any]] | None = None
    request_sha256: str | None = None
    condition_sha256: str | None = None
    reasoning_effort: str | None = None
    enable_thinking: bool | None = None
    sampling: dict[str, Any] | None = None
    error: str | None = None
    toolkit: dict[str, Any] | None = None

    @classmethod
    def of(cls, record: "RunRecord") -> "HarborAgentMetadata":
        a = record.protocol_a
        return cls(**{f.name: (getattr(record, f.name) if f.name in _READERS else
                               or_none(getattr(a, f.name))) for f in fields(cls)})

    def to_doc(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def write_run(cdir: str | os.PathLike, record: RunRecord | dict[str, Any]) -> RunRecord:
    """The one writer of run.json (atomic, surrogate-safe); returns the record written."""
    rec = record if isinstance(record, RunRecord) else RunRecord.build(record)
    write_json_atomic(Path(cdir) / RUN_FILE, rec.to_doc())
    return rec


def format_problem(doc: dict[str, Any]) -> str:
    """'' when a run.json document is of the format this toolkit reads (`RUN_FORMAT`, or no `format` key:
    a record written before the key existed, read as version 1), else why not."""
    if FORMAT_KEY not in doc or doc[FORMAT_KEY] == RUN_FORMAT:
        return ""
    shown = doc[FORMAT_KEY] if isinstance(doc[FORMAT_KEY], str) else type(doc[FORMAT_KEY]).__name__
    return (f"{RUN_FILE} is format {str(shown)[:80]!r}, not {RUN_FORMAT} (written by another version of the "
            f"toolkit, or not a run record)")


def read_run(cdir: str | os.PathLike) -> tuple[RunRecord | None, str]:
    """(record, '') or (None, why): no run.json, unreadable, not a JSON object, too large, or of another
    format (`format_problem`; a record without the key is version 1)."""
    path = Path(cdir) / RUN_FILE
    if not (path.is_file() or path.is_symlink()):
        return None, f"no {RUN_FILE}"
    doc, err = read_json_object(path)
    if doc is None:
        return None, f"{RUN_FILE} {err}"
    why = format_problem(doc)
    if why:
        return None, why
    return RunRecord.from_doc(doc), ""


# --------------------------------------------------------------------------------------------------
# the digests a runner always writes
# --------------------------------------------------------------------------------------------------
#: The digests each runner writes into the record of every cell that ran (docs/PROTOCOLS.md, the run.json
#: keys): run-a (protocol_a/request_cell.py, also the Protocol A Harbor agent's agent/run.json) and run-b
#: (protocol_b/agent_cell.py).  A record of a cell that ran without one of them is an integrity error for every
#: reader: without `answer_sha256` a changed answer would be judged, without `instruction_sha256` a
#: changed instruction would go unnoticed.
RUNNER_DIGESTS = {
    "A": ("condition_sha256", "instruction_sha256", "request_sha256", "answer_sha256"),
    "B": ("instruction_sha256", "prompt_sha256", "prompt_template_sha256", "seed_sha256", "answer_sha256"),
}
#: The answer states whose record names the digest of the answer the run left (run-a: the answered
#: answer.json; run-b: the sandbox's file, the seed's bytes for never_wrote); every other state's
#: `answer_sha256` is null (no answer, or none read: deleted, too_large).
ANSWER_DIGEST_STATES = ("answered", "wrote", "never_wrote")
#: Protocol A's stop reason of a request over the model's context: no reply, so no request_sha256
CONTEXT_OVERFLOW = "context_overflow"
_HEX = frozenset("0123456789abcdefABCDEF")


def is_digest(v: Any) -> bool:
    """A SHA-256 as the runners write it: 64 hexadecimal digits."""
    return isinstance(v, str) and len(v) == 64 and set(v) <= _HEX


def missing_digests(record: RunRecord, runner: bool = True) -> list[str]:
    """The digests the record's runner writes into every record of a cell that ran (RUNNER_DIGESTS) that
    this record does not hold as 64 hexadecimal digits; ["protocol"] for a record that names neither
    protocol.  `runner` False: a record written directly by its caller (the baselines' oracle, nop and
    grid ceiling, which made no request and delivered no prompt): only the answer's digest is asked."""
    if record.protocol not in RUNNER_DIGESTS:
        return ["protocol"]
    doc = record.as_read()
    want = RUNNER_DIGESTS[record.protocol] if runner else ("answer_sha256",)
    out = []
    for key in want:
        if key == "answer_sha256" and record.answer_state not in ANSWER_DIGEST_STATES:
            continue
        if key == "request_sha256" and record.stop_reason == CONTEXT_OVERFLOW:
            continue
        if not is_digest(doc.get(key)):
            out.append(key)
    return out


def digests_problem(record: RunRecord, label: str, runner: bool = True) -> str:
    """The integrity error of a run record (`label`: how a message names it) without a digest its runner
    always writes (missing_digests); '' when it holds them all."""
    gaps = missing_digests(record, runner)
    if gaps == ["protocol"]:
        return (f"INTEGRITY: {label} names no protocol (A or B; every runner writes it): the record was edited "
                f"or is not a runner's; not scored")
    who = "run-a" if record.protocol == "A" else "run-b"
    return (f"INTEGRITY: {label} holds no {', '.join(gaps)} (a digest {who} writes into the record of every cell "
            f"that ran, as 64 hex digits): the record was edited or is not a runner's; not scored") if gaps else ""


# --------------------------------------------------------------------------------------------------
# did the cell run
# --------------------------------------------------------------------------------------------------
NOT_RUN = "not_run"              # no case folder
NO_RECORD = "no_record"          # a folder without run.json (a run killed before it wrote one)
UNREADABLE = "unreadable"        # run.json is not a JSON object (or too large)
NEVER_RAN = "harness_error"      # the record says the agent or the request never ran
RAN = "ran"


@dataclass(frozen=True)
class CellStatus:
    state: str
    reason: str = ""
    record: RunRecord | None = None

    @property
    def finished(self) -> bool:
        """The cell ran: a resume skips it (unless --force), the scorer judges what it left."""
        return self.state == RAN

    @property
    def missing(self) -> bool:
        return self.state != RAN


def cell_status(cdir: str | os.PathLike) -> CellStatus:
    """The one rule of "did this cell run" (run-a and run-b resume, the scorer's missing cells)."""
    cdir = Path(cdir)
    if not cdir.is_dir():
        return CellStatus(NOT_RUN, "not run (no case folder)")
    if not (cdir / RUN_FILE).is_file():
        return CellStatus(NO_RECORD, f"no {RUN_FILE}")
    rec, err = read_run(cdir)
    if rec is None:
        return CellStatus(UNREADABLE, err)
    if not rec.ran:
        return CellStatus(NEVER_RAN, f"{HARNESS_ERROR} (never ran)" if rec.stop_reason == HARNESS_ERROR
                          else "no stop_reason (the run did not finish)", rec)
    return CellStatus(RAN, "", rec)


__all__ = [
    "ANSWER_DIGEST_STATES", "ANSWER_FILE", "ANSWER_STATES", "ATTEMPTS_DIR", "Attempt", "COMMON_KEYS", "CellStatus",
    "HARNESS_ERROR", "RUNNER_DIGESTS", "digests_problem", "is_digest", "missing_digests", "redraws_of", "start_attempt",
    "NO_ANSWER_STATES", "PROMPT_FILE", "REASONING_FILE", "RECEIPT_FILE", "RECEIPT_FORMAT", "REPLY_FILE", "RUN_FILE",
    "RUN_FORMAT", "RunRecord", "cell_dir", "cell_status", "format_problem", "read_run", "redact", "write_answer",
    "write_run",
]
