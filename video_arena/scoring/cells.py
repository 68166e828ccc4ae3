"""One cell of a results folder: its status, caveats and judge record (docs/SCORING.md, "Cell statuses").

What a results folder and a run record are, and the one rule of whether a cell ran (`cell_status`),
are video_arena/core/results.py (docs/ARCHITECTURE.md).  `score_cell` scores one cell from its source,
by the same steps whatever the source: a native cell folder (`CellFolder`) or a Harbor trial
(video_arena/scoring/harbor_jobs.py `TrialCell`).  The checks every cell passes before it is judged
(`passes_gates`) and the ground-truth check against the manifests are here too.  Answers are read with a bound (the judge's cap + 1 byte).
A cell's integrity (its folder is no link, its record holds every digest its runner writes, the answer it
says it left is there and unchanged) is checked before anything else, so no later gate can hide it.
"""
from __future__ import annotations

import abc
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from video_arena.core import provenance
from video_arena import safe_io
from video_arena.core import results as R
from video_arena.core import tasks as T
from video_arena.core.condition import ConditionFiles
from video_arena.digests import sha256_bytes
from video_arena.scoring import caveats as CV
# the metric names (the judge's REWARD_KEYS) and their display tables, re-exported for SC.<name> readers
from video_arena.scoring.metrics import (ALL_METRICS, ALWAYS_DEFINED, LABELS, METRICS, N_COLUMN,  # noqa: F401
                                         REWARD, SHORT, T1_F1, T2_MACRO_ACC, T3_MACRO_ACC, TIERS, ZERO_FILLED,
                                         label_of)
from video_arena.core.instruction import instruction_for, text_digest

BENCHMARK_TOLERANCE_S = 3.0
#: Answer states (video_arena/core/results.py): those of a run that ran and left no answer score 0.0
NO_ANSWER_STATES = R.NO_ANSWER_STATES
ANSWER_STATES = R.ANSWER_STATES
SCORE_FORMAT = "video-arena-score/1"

STATUS_SCORED = "scored"
STATUS_MISSING = "missing"
STATUS_DIAGNOSTIC = "diagnostic"
STATUS_UNVERIFIED = "unverified"
#: the answer or the ground truth is not the one recorded (answer_sha256, manifest.json): never scored
STATUS_CORRUPT = "corrupt"
#: --exclude-flagged: the egress audit did not find the transcript clean
STATUS_FLAGGED = "flagged"
STATUSES = (STATUS_SCORED, STATUS_MISSING, STATUS_DIAGNOSTIC, STATUS_UNVERIFIED, STATUS_CORRUPT, STATUS_FLAGGED)
EXCLUDED = (STATUS_DIAGNOSTIC, STATUS_UNVERIFIED, STATUS_FLAGGED)
#: `context_overflow` (the system could not take the request: scored 0.0 on every metric) and
#: `content_filtered` (the reply ended on a content filter: scored as the reply it is) are counted with
#: the others; docs/SCORING.md, "Cell statuses"
CAVEATS = ("degraded", "truncated", "multi_block", "audit_flagged", "redrawn", "over_turns", "no_isolation",
           "allow_paths", "preflight_warned", "context_overflow", "content_filtered", "served_other_model",
           "non_reference", "served_unnamed", "isolation_unrecorded")
#: the finish reason of a reply a provider's content filter cut or replaced
CONTENT_FILTER = "content_filter"


class ScoringInputError(ValueError):
    """The input cannot be scored at all (no such folder, not a results folder, unknown games)."""


# --------------------------------------------------------------------------------------------------
# cells


@dataclass
class Cell:
    game: str
    case_id: str
    status: str
    reason: str = ""
    protocol: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    answer_state: str | None = None
    instruction_sha256: str | None = None
    instruction_current: bool | None = None
    run_tolerance_s: float | None = None
    zero_rows: bool = False
    record: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    # caveats and the declared condition (video_arena/scoring/caveats.py)
    reasoning_effort: str | None = None
    effort_recorded: bool = False
    #: the run record's toolkit provenance (version, commit, dirty flag, judge version), if any
    toolkit: str | None = None
    condition_sha256: str | None = None
    grid: str | None = None
    transport: str | None = None
    degraded: bool = False
    degradations: str = ""
    truncated: bool = False
    n_json_blocks: int | None = None
    recall_ceiling: float | None = None
    frames_used: int | None = None
    turns_used: int | None = None
    audit_verdict: str | None = None
    #: the recorded condition fields (video_arena/core/condition_fields.py), compared across cells
    condition: dict[str, Any] = field(default_factory=dict)
    #: ok (the answer's SHA-256 equals the run record's), unrecorded (the record names none), oversize
    #: (over the judge's cap: not hashed, scores 0.0), n/a (no answer file is scored)
    answer_check: str | None = None
    #: the run record's attempt number (1 = first run of the cell; not a Harbor trial's -k attempt) and how
    #: many earlier attempts ran (re-draws)
    run_attempt: int | None = None
    n_redraws: int = 0
    #: the turn cap the run declared (0 = the harness cannot count turns) and whether turns_used exceeds it
    max_turns: int | None = None
    over_turns: bool = False
    #: Protocol B: the isolation mode (bwrap | none), the extra --allow-path count, the preflight
    #: warnings (None: no preflight recorded; skipped: --skip-preflight)
    isolation: str | None = None
    n_allow_paths: int = 0
    preflight: str | None = None
    preflight_warnings: int = 0
    #: Protocol A: the reply's finish_reason as the run recorded it (content_filter is a caveat)
    finish_reason: str | None = None
    #: the run record says the agent command never started (Protocol B `agent_started: false`)
    agent_not_started: bool = False
    #: the cell has no readable run record (an answer without one is corrupt: nothing of it is compared)
    no_run_record: bool = False
    #: the run record lacks a digest its runner always writes (corrupt: nothing of it is compared)
    record_incomplete: bool = False

    @property
    def context_overflow(self) -> bool:
        """The system under test could not take the request (over its context, after any degrade its
        condition allows): scored 0.0 on every metric (score_overflow)."""
        return self.stop_reason in CV.CONTEXT_OVERFLOW

    @property
    def content_filtered(self) -> bool:
        return self.finish_reason == CONTENT_FILTER
    #: Protocol A: the model the server named in the scored reply (run.json `served_model`), and whether
    #: it is another model than the one requested (caveats.served_differs)
    served_model: str | None = None
    served_other_model: bool = False
    #: Protocol A: the cell's condition file is none of the versioned ones (its digest matches no file in
    #: video_arena/core/conditions/): not the benchmark's condition, whatever name it gives itself
    non_reference: bool = False
    #: Protocol B: the run record names no isolation mode it ran under (CV.ISOLATION_MODES: `isolation`
    #: null, absent, or a mode run-b never writes): neither isolated nor known not to be
    isolation_unrecorded: bool = False

    @property
    def served_unnamed(self) -> bool:
        """A Protocol A reply that names no model (`served_model` null, or a record from before run-a
        recorded it): nothing says the requested model produced it.  A context overflow, or a cell that never
        ran (missing), has no reply."""
        return (self.protocol == "A" and self.status != STATUS_MISSING and not self.context_overflow
                and not self.served_model)

    @property
    def redrawn(self) -> bool:
        return self.n_redraws > 0

    @property
    def no_isolation(self) -> bool:
        return self.isolation == "none"

    @property
    def allow_paths(self) -> bool:
        return self.n_allow_paths > 0

    @property
    def preflight_warned(self) -> bool:
        return self.preflight_warnings > 0

    @property
    def multi_block(self) -> bool:
        return (self.n_json_blocks or 0) > 1

    @property
    def audit_flagged(self) -> bool:
        return self.audit_verdict is not None and self.audit_verdict != "clean"

    def caveat(self, name: str) -> bool:
        return bool(getattr(self, name))

    def metric(self, name: str) -> float | None:
        if self.status != STATUS_SCORED or self.record is None:
            return None
        if name in ZERO_FILLED:
            v = self.record.get(ZERO_FILLED[name])
            return 0.0 if v is None else float(v)
        v = self.record.get(name)
        if v is None:
            return None
        return float(v)

    def to_row(self) -> dict[str, Any]:
        rec = self.record or {}
        row = {
            "game": self.game, "case_id": self.case_id, "status": self.status, "reason": self.reason,
            "protocol": self.protocol, "model": self.model, "stop_reason": self.stop_reason,
            "answer_state": self.answer_state, "zero_rows": self.zero_rows,
            "run_tolerance_s": self.run_tolerance_s, "instruction_current": self.instruction_current,
            R.REASONING_EFFORT: self.reasoning_effort, "condition_sha256": self.condition_sha256,
            "grid": self.grid, "transport": self.transport, "degraded": self.degraded,
            "degradations": self.degradations, "truncated": self.truncated, "n_json_blocks": self.n_json_blocks,
            "multi_block": self.multi_block, "t1_recall_ceiling": self.recall_ceiling,
            "frames_used": self.frames_used, "turns_used": self.turns_used, "audit_verdict": self.audit_verdict,
            "audit_flagged": self.audit_flagged, "answer_check": self.answer_check, "toolkit": self.toolkit,
            "run_attempt": self.run_attempt, "n_redraws": self.n_redraws, "max_turns": self.max_turns,
            "over_turns": self.over_turns, "isolation": self.isolation, "n_allow_paths": self.n_allow_paths,
            "preflight": self.preflight, "preflight_warnings": self.preflight_warnings,
            "context_overflow": self.context_overflow, "finish_reason": self.finish_reason,
            "content_filtered": self.content_filtered,
            "served_model": self.served_model, "served_other_model": self.served_other_model,
            "non_reference": self.non_reference, "served_unnamed": self.served_unnamed,
            "isolation_unrecorded": self.isolation_unrecorded,
        }
        for k in ("n_pred", "n_gt", "n_matched", "n_matched_strict", *METRICS, "format_error"):
            row[k] = rec.get(k) if self.status == STATUS_SCORED else None
        for k in ZERO_FILLED:
            row[k] = self.metric(k)
        row["warnings"] = "; ".join(self.warnings)
        return row


def recorded_tolerance(run: dict[str, Any]) -> float | None:
    """The matching tolerance a run record says it was made for, if it names one.

    Looks at `tolerance_s` / `tolerance` at the top level and inside `condition`, `conditions`,
    `sampling` or `judge` (Protocol A writes its condition file into run.json)."""
    places: list[dict[str, Any]] = [run]
    for key in ("condition", "conditions", "sampling", "judge"):
        sub = run.get(key)
        if isinstance(sub, dict):
            places.append(sub)
    for place in places:
        for key in ("tolerance_s", "tolerance"):
            v = place.get(key)
            if v is None:
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool):  # 10**400: no float holds it
                f = safe_io.finite_number(v)
                return float("nan") if f is None else f
            try:
                return float(v)
            except (TypeError, ValueError):
                return float("nan")
    return None


def read_answer(cell: Cell, path: Path, expected_sha: Any, label: str = "answer.json") -> bytes | None:
    """The bytes of an answer to judge, read with a bound (never more than the judge's cap + 1 byte),
    checked against the SHA-256 its run record names.  Sets cell.answer_check; on a mismatch sets the
    cell corrupt and returns None (the caller must not judge it).  Unreadable: None, with a warning."""
    try:
        data, size = safe_io.read_bounded(path, CV.MAX_ANSWER_BYTES)
    except OSError as exc:
        cell.warnings.append(f"{label} unreadable ({exc.strerror or exc}): scored as no answer")
        cell.answer_check = "unreadable"
        return None
    if size > CV.MAX_ANSWER_BYTES:
        cell.answer_check = "oversize"
        return data  # over the cap: the judge refuses it (0.0, format_error); not hashed
    if isinstance(expected_sha, str) and expected_sha:
        got = sha256_bytes(data)
        if got != expected_sha.lower():
            cell.status = STATUS_CORRUPT
            cell.reason = (f"INTEGRITY: {label} has SHA-256 {got[:16]}..., its run record says "
                           f"{expected_sha[:16]}...: the answer was changed after the run; not scored")
            cell.answer_check = "mismatch"
            return None
        cell.answer_check = "ok"
    else:
        cell.answer_check = "unrecorded"
    return data


def judge_answer(J, cell: Cell, gt: dict[str, Any], data: bytes | None, tolerance: float) -> None:
    """Judge bytes read by read_answer; an oversize answer scores 0.0 with the judge's own reason."""
    cell.status = STATUS_SCORED
    if cell.answer_check == "oversize":
        cell.record = J.judge(gt, None, tolerance=tolerance)
        cell.record["format_error"] = (f"answer is more than the {CV.MAX_ANSWER_BYTES} bytes the judge accepts "
                                       f"(not read past the cap)")
    else:
        cell.record = J.judge(gt, data, tolerance=tolerance)
    cell.zero_rows = int(cell.record.get("n_pred") or 0) == 0


def score_overflow(J, cell: Cell, gt: dict[str, Any], tolerance: float) -> None:
    """A cell the system under test could not answer because of its own limits (its request over the
    model's context, after any degrade its condition allows): 0.0 on every metric, as a cell that left
    no answer, counted in the context_overflow column (never missing: that would drop the hardest cases
    from the denominator).  The one rule for native cells and Harbor trials (docs/SCORING.md)."""
    cell.status = STATUS_SCORED
    cell.answer_check = "n/a"
    cell.zero_rows = False  # counted in its own column, not in 0-row
    cell.reason = ("context_overflow: the request was over the model's context (after any degrade the "
                   "condition allows): 0.0 on every metric")
    cell.record = J.judge(gt, None, tolerance=tolerance)
    cell.record["format_error"] = None


class InstructionDigests:
    """sha256 of tasks/<game>/instruction.md rendered per protocol (cached)."""

    def __init__(self, tasks_root: Path):
        self.root = tasks_root
        self._cache: dict[tuple[str, str], str | None] = {}

    def get(self, game: str, protocol: str) -> str | None:
        key = (game, protocol)
        if key not in self._cache:
            try:
                self._cache[key] = text_digest(instruction_for(protocol, self.root / game / "instruction.md"))
            except Exception:  # noqa: BLE001 - a digest we cannot compute is simply not compared
                self._cache[key] = None
        return self._cache[key]


class CellSource(abc.ABC):
    """Where one cell is read from: a native cell folder (`CellFolder`) or a Harbor trial
    (video_arena/scoring/harbor_jobs.py `TrialCell`, read through video_arena/harbor_api/trials.py).
    `score_cell` asks every source the same questions in the same order; what a source answers is its
    own (what its record is, whether it ran, where its answer is, what its messages say)."""

    #: the folder of the cell's run record: a Protocol A request is rebuilt from it
    record_dir: Path
    #: where the cell's condition files are (a custom condition is found there), and the run's reader of
    #: them (each file read once per run, bounded, never through a link)
    conditions_dir: Path | None = None
    conditions: ConditionFiles | None = None
    #: the folder of the cell's earlier attempts (None: attempts are not folders of the source)
    attempts_dir: Path | None = None
    #: the answer file and how a message names it
    answer_path: Path
    answer_label: str = R.ANSWER_FILE
    #: the answer state of a cell that ran, whose source holds no answer and whose record does not say
    #: the run left one (None: a source whose records always say)
    absent_answer_state: str | None = None

    @abc.abstractmethod
    def new_cell(self, game: str, case_id: str) -> Cell:
        """The cell, missing until the source says otherwise."""

    @abc.abstractmethod
    def read(self, cell: Cell) -> bool:
        """Read what the source says about the cell; False when that is all (the cell is missing or
        corrupt, its status and reason set)."""

    @abc.abstractmethod
    def names_other_cell(self, game: str, case_id: str) -> str:
        """'' when the source's records name this cell (where they name one), else why not."""

    def warning(self, text: str) -> str:
        """A warning about the cell as the source words it."""
        return text

    @abc.abstractmethod
    def run_record(self, cell: Cell) -> R.RunRecord | None:
        """The toolkit's run record of the cell, when there is one to read its caveats from."""

    def read_own_caveats(self, cell: Cell) -> None:
        """The caveats the source knows beyond its run record."""

    @abc.abstractmethod
    def finished(self, cell: Cell) -> bool:
        """Whether the cell ran to an end that is scored; False: missing, with its reason set."""

    def recorded_tolerance(self) -> float | None:
        """The matching tolerance the cell says it was made for (None: it names none)."""
        return None

    def rebuildable(self) -> bool:
        """Whether a Protocol A request can be rebuilt from `record_dir`."""
        return True

    def before_judging(self, cell: Cell) -> None:
        """What the source warns about a cell that passed every gate."""

    @abc.abstractmethod
    def says_answer_left(self, cell: Cell) -> bool:
        """Whether the cell's record says the run left an answer (an absent one is then an integrity error)."""

    @abc.abstractmethod
    def vanished_answer(self, cell: Cell) -> str:
        """The integrity error of an answer the record says the run left and the source does not hold."""

    def no_answer_reason(self, state: str | None) -> str:
        """The reason of a cell that ran and left no answer (scored 0.0)."""
        return f"ran, no answer ({state})"

    @abc.abstractmethod
    def answer_sha256(self) -> Any:
        """The SHA-256 the cell's record names for its answer (None: it names none)."""

    def record_gaps(self, cell: Cell) -> str:
        """The integrity error of a run record without a digest its runner always writes ('' when it
        holds them all, or when the source has no toolkit record to ask)."""
        return ""

    def after_judging(self, judge_mod, cell: Cell, tolerance: float) -> None:
        """What the source adds to a judged cell."""


class CellFolder(CellSource):
    """A native cell folder `<out>/<game>/<case_id>/` (video_arena/core/results.py).  `runner_records`
    False: the caller wrote the cells' answers directly (the baselines' oracle, nop and grid ceiling):
    their records name the answer's digest, no runner's other digests (R.missing_digests)."""

    def __init__(self, cell_dir: Path, conditions_dir: Path | None = None, conditions: ConditionFiles | None = None,
                 runner_records: bool = True):
        self.record_dir = self.attempts_dir = self.cell_dir = Path(cell_dir)
        self.conditions_dir = conditions_dir
        self.conditions = conditions
        self.runner_records = runner_records
        self.answer_path = self.cell_dir / R.ANSWER_FILE
        self.status: R.CellStatus | None = None
        self.record: R.RunRecord | None = None

    def new_cell(self, game: str, case_id: str) -> Cell:
        return Cell(game=game, case_id=case_id, status=STATUS_MISSING)

    def read(self, cell: Cell) -> bool:
        if os.path.islink(self.cell_dir):  # never followed: a link could lend the cell another run's folder
            cell.no_run_record = True
            mark_corrupt(cell, f"INTEGRITY: the cell folder {cell.game}/{cell.case_id} is a symbolic link (to "
                               f"{os.readlink(self.cell_dir)[:200]!r}): a cell is read only from a real folder of "
                               f"its results folder; not scored, never missing")
            return False
        st = self.status = R.cell_status(self.cell_dir)
        rec = self.record = st.record
        if rec is None:  # no folder, no run.json, or one that is not a record
            cell.reason = st.reason
            if st.state == R.UNREADABLE:
                cell.warnings.append(cell.reason)
            cell.no_run_record = True
            if st.state in (R.NO_RECORD, R.UNREADABLE) and has_answer_file(self.cell_dir):
                mark_corrupt(cell, f"INTEGRITY: answer.json without a readable run.json ({st.reason}): the run "
                                   f"record was removed or damaged, or the run died between writing them; not "
                                   f"scored, never missing (a resume of run-a/run-b re-runs the cell)")
            return False
        cell.protocol, cell.model, cell.stop_reason = rec.protocol, rec.model, rec.stop_reason
        cell.answer_state, cell.instruction_sha256 = rec.answer_state, rec.instruction_sha256
        return True

    def names_other_cell(self, game: str, case_id: str) -> str:
        return self.record.names_other_cell(game, case_id)

    def run_record(self, cell: Cell) -> R.RunRecord | None:
        return self.record

    def finished(self, cell: Cell) -> bool:
        if self.status.finished:
            return True
        cell.reason = self.status.reason  # harness_error: never ran
        if cell.agent_not_started:
            cell.reason = f"{self.status.reason}: {str(self.record.protocol_b.error or '')[:300]}"
        return False

    def recorded_tolerance(self) -> float | None:
        return recorded_tolerance(self.record.as_read())

    def says_answer_left(self, cell: Cell) -> bool:
        return True  # a finished run whose answer state is not a no-answer one left an answer

    def vanished_answer(self, cell: Cell) -> str:
        return (f"INTEGRITY: answer.json is missing, its run record says the run left one (answer_state "
                f"{cell.answer_state or 'not recorded'}, stop_reason {cell.stop_reason}): the answer was "
                f"removed after the run; not scored")

    def answer_sha256(self) -> Any:
        return self.record.answer_sha256

    def record_gaps(self, cell: Cell) -> str:
        return R.digests_problem(self.record, R.RUN_FILE, runner=self.runner_records)


def score_cell(judge_mod, source: CellSource, game: str, case_id: str, gt: dict[str, Any] | None,
               gt_error: str, tolerance: float, digests: InstructionDigests | None = None,
               verifier: Callable[[Path], tuple[bool, str]] | None = None, exclude_flagged: bool = False) -> Cell:
    """One cell's status and judge record, from a native cell folder or a Harbor trial (`CellSource`):
    the same steps in the same order for both; never raises on anything the source holds.  The cell's
    integrity comes first (`check_integrity`): what the record says the run left must be there, whatever
    a later gate (the tolerance, the request's verification, the audit) would find."""
    cell = source.new_cell(game, case_id)
    if not source.read(cell):
        return cell
    other = source.names_other_cell(game, case_id)
    if other:
        cell.reason = other
        cell.warnings.append(source.warning(cell.reason))
        return cell
    rec = source.run_record(cell)
    if rec is not None:
        CV.read_run_caveats(cell, rec, source.conditions_dir, source.conditions)
        CV.read_run_conduct(cell, rec.protocol_b)
        read_attempts(cell, rec, source.attempts_dir)
    source.read_own_caveats(cell)
    if not source.finished(cell):
        return cell
    if cell.answer_state is not None and cell.answer_state not in ANSWER_STATES:
        cell.warnings.append(f"unknown answer_state {cell.answer_state!r}")
    if digests is not None and cell.instruction_sha256 and cell.protocol in ("A", "B"):
        current = digests.get(game, cell.protocol)
        if current is not None:
            cell.instruction_current = current == cell.instruction_sha256
            if not cell.instruction_current:
                cell.warnings.append("instruction_sha256 differs from the tasks tree's instruction")
    data = check_integrity(cell, source)
    if cell.status == STATUS_CORRUPT:
        return cell
    tol = source.recorded_tolerance()
    cell.run_tolerance_s = tol
    if tol is not None and not (math.isfinite(tol) and abs(tol - tolerance) < 1e-9):
        cell.status = STATUS_DIAGNOSTIC
        cell.reason = (f"run made for a {tol:g} s tolerance, scoring at {tolerance:g} s: a diagnostic, "
                       f"never mixed into a benchmark mean")
        return cell
    # an overflowed request has no reply to rebuild: its cell is checked for tolerance and ground truth only
    check = verifier if cell.protocol == "A" and not cell.context_overflow and source.rebuildable() else None
    if not passes_gates(cell, check, source.record_dir, gt, gt_error):
        return cell
    if exclude_flagged and cell.audit_flagged:
        exclude_as_flagged(cell)
        return cell
    if cell.context_overflow:
        score_overflow(judge_mod, cell, gt, tolerance)
        return cell
    source.before_judging(cell)
    if cell.answer_state in NO_ANSWER_STATES:
        # Ran, left no answer: 0.0 in the mean.  The state decides (seed 000): a never_wrote file
        # is the seed by definition, whatever bytes a later tool may have put there.
        cell.status = STATUS_SCORED
        cell.zero_rows = True
        cell.answer_check = "n/a"
        cell.reason = source.no_answer_reason(cell.answer_state)
        cell.record = judge_mod.judge(gt, None, tolerance=tolerance)
    else:
        judge_answer(judge_mod, cell, gt, data, tolerance)
    source.after_judging(judge_mod, cell, tolerance)
    return cell


def check_integrity(cell: Cell, source: CellSource) -> bytes | None:
    """What a cell that ran must hold before any other gate: its record every digest its runner writes,
    the answer the record says the run left, with the bytes the record names.  Returns the answer's bytes
    to judge (None: no answer to judge, or the cell is now corrupt, its status and reason set)."""
    gaps = source.record_gaps(cell)
    if gaps:
        cell.record_incomplete = True
        mark_corrupt(cell, gaps)
        return None
    if cell.context_overflow:
        return None  # no reply, so no answer: scored 0.0 by the one rule (score_overflow)
    if cell.answer_state not in NO_ANSWER_STATES and not is_present(source.answer_path):
        if source.says_answer_left(cell):
            # The run finished and says it left an answer: a vanished answer is not a missing cell (that
            # would shrink the denominator), it is an integrity error naming the cell.
            cell.answer_check = "absent"
            mark_corrupt(cell, source.vanished_answer(cell))
            return None
        cell.answer_state = source.absent_answer_state
    if cell.answer_state in NO_ANSWER_STATES:
        return None
    data = read_answer(cell, source.answer_path, source.answer_sha256(), source.answer_label)
    if cell.status == STATUS_CORRUPT:
        cell.warnings.append(cell.reason)
        return None
    return data


def read_attempts(cell: Cell, rec: R.RunRecord, cell_dir: Path | None) -> None:
    """The cell's attempt number and re-draws (earlier attempts that ran), from its run record; an
    earlier attempt the record names but the cell folder no longer holds is warned about."""
    extras = rec.protocol_extras
    att = extras.attempt
    cell.run_attempt = att if isinstance(att, int) and not isinstance(att, bool) else None
    cell.n_redraws = len(R.redraws_of(rec))
    if cell_dir is None:
        return
    prev = extras.previous_attempts
    gone = [str(p.get("attempt")) for p in prev if isinstance(p, dict)
            and not (cell_dir / R.ATTEMPTS_DIR / str(p.get("attempt"))).is_dir()] if isinstance(prev, list) else []
    if gone:
        cell.warnings.append(f"attempt history incomplete: {R.ATTEMPTS_DIR}/{', '.join(gone)} named in run.json "
                             f"but not in the cell folder")


def is_present(path: Path) -> bool:
    """A file (or a symlink, which the bounded read refuses) is at `path`."""
    return path.is_file() or path.is_symlink()


def has_answer_file(cell_dir: Path) -> bool:
    return is_present(cell_dir / R.ANSWER_FILE)


def mark_corrupt(cell: Cell, why: str) -> None:
    """An integrity error naming the cell: never scored, never missing (exit 1)."""
    cell.status = STATUS_CORRUPT
    cell.reason = why
    cell.warnings.append(why)


def mark_gt_corrupt(cell: Cell, why: str) -> None:
    """A cell whose ground truth is not the manifest's: never scored, an integrity error."""
    cell.status = STATUS_CORRUPT
    cell.reason = why
    cell.warnings = [w for w in cell.warnings if not w.startswith("ground truth unusable")] + [why]


def exclude_as_flagged(cell: Cell) -> None:
    cell.status = STATUS_FLAGGED
    cell.reason = f"egress audit {cell.audit_verdict} (--exclude-flagged)"


class GroundTruthCheck:
    """Every ground truth against its game's tasks/<game>/manifest.json `gt_sha256` (issue: results
    integrity).  A game without a manifest is reported once as unchecked."""

    def __init__(self, root: Path):
        self.root = root
        self.tree = T.TasksTree(root)
        self._manifests: dict[str, dict[str, str] | None] = {}
        self.unchecked_games: list[str] = []

    def _manifest(self, game: str) -> dict[str, str] | None:
        if game not in self._manifests:
            try:
                doc = self.tree.read_manifest(game)
            except T.TasksTreeError as exc:
                raise ScoringInputError(f"{exc}; the ground truth cannot be checked") from exc
            if doc is None:
                self._manifests[game] = None
                self.unchecked_games.append(game)
            else:
                self._manifests[game] = {str(c.get("case_id")): str(c.get("gt_sha256") or "")
                                         for c in doc.get("cases") or [] if isinstance(c, dict)}
        return self._manifests[game]

    def load(self, J, game: str, case_id: str) -> tuple[dict[str, Any] | None, str, bool]:
        """(gt, error, corrupt): corrupt when the file is not the one the manifest names."""
        gt_path = self.tree.gt(game, case_id)
        manifest = self._manifest(game)
        if manifest is not None:
            want = manifest.get(case_id)
            try:
                data, size = safe_io.read_bounded(gt_path, T.MAX_GT_BYTES)
                got = sha256_bytes(data)
            except OSError as exc:
                return None, f"{gt_path.name}: unreadable ({exc.strerror or exc})", False
            if not want:
                return None, f"INTEGRITY: {game}/{case_id} has no gt_sha256 in {game}/manifest.json", True
            if got != want:
                return None, (f"INTEGRITY: ground truth {T.gt_rel(game, case_id)} has SHA-256 {got[:16]}..., "
                              f"{game}/manifest.json says {want[:16]}...: not scored"), True
        try:
            return J.load_gt(gt_path), "", False
        except Exception as exc:  # noqa: BLE001 - GroundTruthError, OSError: report, go on
            return None, f"{gt_path.name}: {exc}", False


def passes_gates(cell, verifier, cell_dir, gt, gt_error) -> bool:
    """The checks every cell passes before it is judged, native or Harbor: the Protocol A request
    rebuilds from its condition file (when `verifier` is given) and the ground truth is usable.
    Returns False, with the cell's status and reason set, when the cell stops here."""
    if verifier is not None:
        try:
            ok, why = verifier(cell_dir)
        except Exception as exc:  # noqa: BLE001 - a verifier crash is a failed verification
            ok, why = False, f"verify_cell raised {exc!r}"
        if not ok:
            cell.status = STATUS_UNVERIFIED
            cell.reason = f"request does not rebuild: {why}"
            return False
    if gt is None:
        cell.reason = f"ground truth unusable: {gt_error}"
        cell.warnings.append(cell.reason)
        return False
    return True


def load_verifier(tasks_root: Path, conditions: ConditionFiles | None = None) -> Callable[[Path], tuple[bool, str]]:
    """video_arena/core/provenance.py's verify_cell bound to a tasks root and to the run's condition files
    (`conditions`: each copy read once per run; a new reader when None)."""
    files = conditions if conditions is not None else ConditionFiles()
    return lambda cell_dir: provenance.verify_cell(cell_dir, tasks_root, files)
