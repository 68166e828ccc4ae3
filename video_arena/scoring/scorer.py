"""Score a results folder: per-case judge records, per-game means with n, the overall mean of game
means, bootstrap intervals, and the comparison of two systems on the games both scored.

The rules (cell statuses, what is in a mean, T2/T3 over computable cells, attempts averaged per case,
the overall mean of game means, the intervals, caveats, mixing, integrity) are written once, in
docs/SCORING.md; what a results folder and a run record are, and the one rule of whether a cell ran
(`cell_status`), are video_arena/core/results.py (docs/ARCHITECTURE.md).  This module implements them
for a native results folder; video_arena/scoring/harbor_jobs.py turns a Harbor job's trials into the
same cells.  Answers are read with a bound (the judge's cap + 1 byte).
"""
from __future__ import annotations

import importlib
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from video_arena import paths
from video_arena.core import results as R
from video_arena.core import tasks as T
from video_arena.digests import sha256_bytes
from video_arena.protocol_a.condition import CONDITIONS_SUBDIR
from video_arena.scoring import caveats as CV

BENCHMARK_TOLERANCE_S = 3.0
METRICS = ("reward", "t1_f1", "t2_macro_acc", "t3_macro_acc")
#: T2/T3 with a cell that has no T1 match counted as 0.0 (Harbor's reward.json convention): the
#: labelled second column; the headline T2/T3 are the conditional ones above (docs/SCORING.md).
ZERO_FILLED = {"t2_zero_filled": "t2_macro_acc", "t3_zero_filled": "t3_macro_acc"}
ALL_METRICS = METRICS + tuple(ZERO_FILLED)
#: Metrics that are always defined for a scored cell; T2/T3 are None without a T1 match.
ALWAYS_DEFINED = ("reward", "t1_f1")
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
CAVEATS = ("degraded", "truncated", "multi_block", "audit_flagged", "redrawn", "over_turns", "no_isolation",
           "allow_paths", "preflight_warned")


class ScoringInputError(ValueError):
    """The input cannot be scored at all (no such folder, not a results folder, unknown games)."""


# --------------------------------------------------------------------------------------------------
# cells
# --------------------------------------------------------------------------------------------------
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
            "reasoning_effort": self.reasoning_effort, "condition_sha256": self.condition_sha256,
            "grid": self.grid, "transport": self.transport, "degraded": self.degraded,
            "degradations": self.degradations, "truncated": self.truncated, "n_json_blocks": self.n_json_blocks,
            "multi_block": self.multi_block, "t1_recall_ceiling": self.recall_ceiling,
            "frames_used": self.frames_used, "turns_used": self.turns_used, "audit_verdict": self.audit_verdict,
            "audit_flagged": self.audit_flagged, "answer_check": self.answer_check, "toolkit": self.toolkit,
            "run_attempt": self.run_attempt, "n_redraws": self.n_redraws, "max_turns": self.max_turns,
            "over_turns": self.over_turns, "isolation": self.isolation, "n_allow_paths": self.n_allow_paths,
            "preflight": self.preflight, "preflight_warnings": self.preflight_warnings,
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
        data, size = R.read_bounded(path, CV.MAX_ANSWER_BYTES)
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


class _InstructionDigests:
    """sha256 of tasks/<game>/instruction.md rendered per protocol (cached)."""

    def __init__(self, tasks_root: Path):
        self.root = tasks_root
        self._cache: dict[tuple[str, str], str | None] = {}

    def get(self, game: str, protocol: str) -> str | None:
        key = (game, protocol)
        if key not in self._cache:
            from video_arena.core.instruction import instruction_for, text_digest
            try:
                self._cache[key] = text_digest(instruction_for(protocol, self.root / game / "instruction.md"))
            except Exception:  # noqa: BLE001 - a digest we cannot compute is simply not compared
                self._cache[key] = None
        return self._cache[key]


def score_cell(judge_mod, game: str, case_id: str, cell_dir: Path, gt: dict[str, Any] | None,
               gt_error: str, tolerance: float, digests: _InstructionDigests | None = None,
               verifier: Callable[[Path], tuple[bool, str]] | None = None, exclude_flagged: bool = False,
               conditions_dir: Path | None = None) -> Cell:
    """One cell's status and judge record; never raises on anything the cell folder holds."""
    cell = Cell(game=game, case_id=case_id, status=STATUS_MISSING)
    st = R.cell_status(cell_dir)
    rec = st.record
    if rec is None:  # no folder, no run.json, or one that is not a record
        cell.reason = st.reason
        if st.state == R.UNREADABLE:
            cell.warnings.append(cell.reason)
        return cell
    run = rec.as_read()
    cell.protocol, cell.model, cell.stop_reason = rec.protocol, rec.model, rec.stop_reason
    cell.answer_state, cell.instruction_sha256 = rec.answer_state, rec.instruction_sha256
    other = rec.names_other_cell(game, case_id)
    if other:
        cell.reason = other
        cell.warnings.append(cell.reason)
        return cell
    CV.read_run_caveats(cell, run, conditions_dir)
    CV.read_run_conduct(cell, run)
    read_attempts(cell, rec, cell_dir)
    if not st.finished:  # harness_error: never ran
        cell.reason = st.reason
        return cell
    if cell.stop_reason == "context_overflow":
        cell.reason = "context_overflow: the server refused the request as longer than the model's context"
        return cell
    if cell.answer_state is not None and cell.answer_state not in ANSWER_STATES:
        cell.warnings.append(f"unknown answer_state {cell.answer_state!r}")
    if digests is not None and cell.instruction_sha256 and cell.protocol in ("A", "B"):
        current = digests.get(game, cell.protocol)
        if current is not None:
            cell.instruction_current = current == cell.instruction_sha256
            if not cell.instruction_current:
                cell.warnings.append("instruction_sha256 differs from the tasks tree's instruction")
    tol = recorded_tolerance(run)
    cell.run_tolerance_s = tol
    if tol is not None and not (math.isfinite(tol) and abs(tol - tolerance) < 1e-9):
        cell.status = STATUS_DIAGNOSTIC
        cell.reason = (f"run made for a {tol:g} s tolerance, scoring at {tolerance:g} s: a diagnostic, "
                       f"never mixed into a benchmark mean")
        return cell
    if not passes_gates(cell, verifier if cell.protocol == "A" else None, cell_dir, gt, gt_error):
        return cell
    if exclude_flagged and cell.audit_flagged:
        exclude_as_flagged(cell)
        return cell
    answer_path = cell_dir / R.ANSWER_FILE
    if cell.answer_state in NO_ANSWER_STATES:
        # Ran, left no answer: 0.0 in the mean.  The state decides (seed 000): a never_wrote file
        # is the seed by definition, whatever bytes a later tool may have put there.
        cell.status = STATUS_SCORED
        cell.zero_rows = True
        cell.answer_check = "n/a"
        cell.reason = f"ran, no answer ({cell.answer_state})"
        cell.record = judge_mod.judge(gt, None, tolerance=tolerance)
        return cell
    if not (answer_path.is_file() or answer_path.is_symlink()):
        # The run finished and says it left an answer: a vanished answer is not a missing cell (that would
        # shrink the denominator), it is an integrity error naming the cell.
        cell.status = STATUS_CORRUPT
        cell.answer_check = "absent"
        cell.reason = (f"INTEGRITY: answer.json is missing, its run record says the run left one (answer_state "
                       f"{cell.answer_state or 'not recorded'}, stop_reason {cell.stop_reason}): the answer was "
                       f"removed after the run; not scored")
        cell.warnings.append(cell.reason)
        return cell
    data = read_answer(cell, answer_path, rec.answer_sha256)
    if cell.status == STATUS_CORRUPT:
        cell.warnings.append(cell.reason)
        return cell
    judge_answer(judge_mod, cell, gt, data, tolerance)
    return cell


def read_attempts(cell: Cell, rec: R.RunRecord, cell_dir: Path | None) -> None:
    """The cell's attempt number and re-draws (earlier attempts that ran), from its run record; an
    earlier attempt the record names but the cell folder no longer holds is warned about."""
    att = rec.extras.get("attempt")
    cell.run_attempt = att if isinstance(att, int) and not isinstance(att, bool) else None
    cell.n_redraws = len(R.redraws_of(rec))
    if cell_dir is None:
        return
    prev = rec.extras.get("previous_attempts")
    gone = [str(p.get("attempt")) for p in prev if isinstance(p, dict)
            and not (cell_dir / R.ATTEMPTS_DIR / str(p.get("attempt"))).is_dir()] if isinstance(prev, list) else []
    if gone:
        cell.warnings.append(f"attempt history incomplete: {R.ATTEMPTS_DIR}/{', '.join(gone)} named in run.json "
                             f"but not in the cell folder")


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
        self._manifests: dict[str, dict[str, str] | None] = {}
        self.unchecked_games: list[str] = []

    def _manifest(self, game: str) -> dict[str, str] | None:
        if game not in self._manifests:
            path = self.root / game / "manifest.json"
            if not path.exists():
                self._manifests[game] = None
                self.unchecked_games.append(game)
            else:
                doc, err = R.read_json_object(path)
                if doc is None:
                    raise ScoringInputError(f"{path}: {err}; the ground truth cannot be checked")
                self._manifests[game] = {str(c.get("case_id")): str(c.get("gt_sha256") or "")
                                         for c in doc.get("cases") or [] if isinstance(c, dict)}
        return self._manifests[game]

    def load(self, J, game: str, case_id: str) -> tuple[dict[str, Any] | None, str, bool]:
        """(gt, error, corrupt): corrupt when the file is not the one the manifest names."""
        gt_path = self.root / game / "gt" / f"{case_id}.json"
        manifest = self._manifest(game)
        if manifest is not None:
            want = manifest.get(case_id)
            try:
                data, size = R.read_bounded(gt_path, 1 << 28)
                got = sha256_bytes(data)
            except OSError as exc:
                return None, f"{gt_path.name}: unreadable ({exc.strerror or exc})", False
            if not want:
                return None, f"INTEGRITY: {game}/{case_id} has no gt_sha256 in {game}/manifest.json", True
            if got != want:
                return None, (f"INTEGRITY: ground truth {game}/gt/{case_id}.json has SHA-256 {got[:16]}..., "
                              f"{game}/manifest.json says {want[:16]}...: not scored"), True
        try:
            return J.load_gt(gt_path), "", False
        except Exception as exc:  # noqa: BLE001 - GroundTruthError, OSError: report, go on
            return None, f"{gt_path.name}: {exc}", False


# --------------------------------------------------------------------------------------------------
# results folder
# --------------------------------------------------------------------------------------------------
def _visible_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def inspect_results(results: Path, tasks_root: Path) -> dict[str, list[str]]:
    """{game: [case folder names]} of a results folder; raises ScoringInputError when it is not one."""
    if not results.exists():
        raise ScoringInputError(f"results folder {results} does not exist")
    if not results.is_dir():
        raise ScoringInputError(f"results folder {results} is not a directory")
    known = T.list_games(tasks_root)
    subdirs = _visible_dirs(results)
    unknown = [d.name for d in subdirs if d.name not in known]
    if len(unknown) == len(subdirs):  # nothing in it is a game folder
        looks_like = ""
        if (results / R.RUN_FILE).is_file():
            looks_like = "; it holds a run.json itself: that is one cell's folder, pass the folder two levels up"
        elif any((d / R.RUN_FILE).is_file() for d in subdirs):
            looks_like = "; its subfolders hold run.json: that is one game's folder, pass its parent"
        elif not subdirs:
            looks_like = "; it is empty"
        raise ScoringInputError(
            f"{results} is not a results folder: expected <results>/<game>/<case_id>/run.json with "
            f"<game> one of {', '.join(known) or '(no games in the tasks tree)'}{looks_like}")
    if unknown:
        raise ScoringInputError(
            f"{results}: unknown game folder(s) {', '.join(unknown)}: not games of the tasks tree "
            f"{tasks_root} ({', '.join(known)}); pass the tasks tree the run used with --tasks-root")
    return {d.name: [c.name for c in _visible_dirs(d)] for d in subdirs}


@dataclass
class GameScore:
    game: str
    n_cases: int
    cells: list[Cell]
    means: dict[str, float | None]
    n: dict[str, int]
    ci: dict[str, tuple[float, float] | None]
    replicates: dict[str, np.ndarray | None]
    counts: dict[str, int]
    extra_case_dirs: list[str]
    #: per metric: the number of cells (trials) behind the case means in `n` (equal to `n` with one
    #: cell per case)
    n_trials: dict[str, int] = field(default_factory=dict)

    @property
    def n_scored(self) -> int:
        """Scored cells (with several attempts per case: scored trials)."""
        return self.counts[STATUS_SCORED]

    @property
    def n_scored_cases(self) -> int:
        """Cases with at least one scored cell (= n_scored with one cell per case)."""
        return len({c.case_id for c in self.cells if c.status == STATUS_SCORED})

    @property
    def multi_attempt(self) -> bool:
        """More than one cell for some case (a Harbor job run with -k N)."""
        return len(self.cells) > len({c.case_id for c in self.cells})

    @property
    def scored(self) -> bool:
        return self.n_scored > 0

    def summary(self) -> dict[str, Any]:
        return {
            "game": self.game, "n_cases": self.n_cases, "n_scored": self.n_scored,
            "n_scored_cases": self.n_scored_cases, "n_cells": len(self.cells), "n_trials": dict(self.n_trials),
            "scored": self.scored,
            "counts": dict(self.counts),
            "means": dict(self.means), "n": dict(self.n),
            "ci95": {k: (list(v) if v is not None else None) for k, v in self.ci.items()},
            "harbor_means": self.harbor_means(),
            "caveats": self.caveats(),
            "answer_states": _tally(c.answer_state for c in self.cells if c.status == STATUS_SCORED),
            "stop_reasons": _tally(c.stop_reason for c in self.cells if c.protocol or c.stop_reason),
            "extra_case_dirs": list(self.extra_case_dirs),
        }

    def harbor_means(self) -> dict[str, float | None]:
        """Means with a missing tier as 0.0, as Harbor's reward.json has them (the zero-filled column)."""
        return {"reward": self.means["reward"], "t1_f1": self.means["t1_f1"],
                "t2_macro_acc": self.means["t2_zero_filled"], "t3_macro_acc": self.means["t3_zero_filled"]}

    def recall_ceiling(self) -> float | None:
        v = [c.recall_ceiling for c in self.cells if c.status == STATUS_SCORED and c.recall_ceiling is not None]
        return float(np.mean(v)) if v else None

    def efforts(self) -> dict[str, int]:
        return _tally(c.reasoning_effort for c in self.cells if c.status == STATUS_SCORED)

    def caveats(self) -> dict[str, Any]:
        return {"n_scored": self.n_scored_cases, "n_cases": self.n_cases, "zero_rows": self.counts["zero_rows"],
                **{cv: self.counts[cv] for cv in CAVEATS}, "t1_recall_ceiling_mean": self.recall_ceiling(),
                "reasoning_effort": self.efforts(),
                "answer_check": _tally(c.answer_check for c in self.cells if c.status == STATUS_SCORED),
                "audit_verdicts": _tally(c.audit_verdict for c in self.cells
                                         if c.status in (STATUS_SCORED, STATUS_FLAGGED) and c.audit_verdict)}


def _tally(values: Iterable[str | None]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        k = "none" if v is None else str(v)
        out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items()))


def _rng(seed: int, game: str, metric: str) -> np.random.Generator:
    # One stream per (seed, game, metric): adding a game never moves another game's interval, and
    # two systems that scored the same cases get the same resampling indices (a paired bootstrap).
    return np.random.default_rng([seed, zlib.crc32(game.encode()), zlib.crc32(metric.encode())])


def bootstrap_means(values: list[float], n_boot: int, seed: int, game: str, metric: str) -> np.ndarray | None:
    """n_boot bootstrap replicates of the mean of `values` (None when there are no values)."""
    if not values or n_boot <= 0:
        return None
    x = np.asarray(values, dtype=float)
    idx = _rng(seed, game, metric).integers(0, len(x), size=(n_boot, len(x)))
    return x[idx].mean(axis=1)


def percentile_ci(replicates: np.ndarray | None, level: float = 0.95) -> tuple[float, float] | None:
    if replicates is None or len(replicates) == 0:
        return None
    lo, hi = np.percentile(replicates, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


def aggregate_game(game: str, n_cases: int, cells: list[Cell], n_boot: int, seed: int,
                   extra_case_dirs: list[str] | None = None) -> GameScore:
    counts = {s: 0 for s in STATUSES}
    for c in cells:
        counts[c.status] += 1
    counts["excluded"] = sum(counts[s] for s in EXCLUDED)
    scored = [c for c in cells if c.status == STATUS_SCORED]
    for cv in CAVEATS:
        counts[cv] = sum(c.caveat(cv) for c in scored)
    counts["zero_rows"] = sum(c.zero_rows for c in scored)
    counts["format_error"] = sum(bool((c.record or {}).get("format_error")) for c in scored
                                 if c.answer_state not in NO_ANSWER_STATES)
    counts["no_answer"] = sum(c.answer_state in NO_ANSWER_STATES for c in scored)
    means: dict[str, float | None] = {}
    n: dict[str, int] = {}
    ci: dict[str, tuple[float, float] | None] = {}
    reps: dict[str, np.ndarray | None] = {}
    n_trials: dict[str, int] = {}
    for m in ALL_METRICS:
        # Mean per case over its attempts first (one cell per case: the cell's own value, exactly),
        # then the mean of the case means: every case weighs the same however many attempts scored.
        by_case: dict[str, list[float]] = {}
        for c in scored:
            v = c.metric(m)
            if v is not None:
                by_case.setdefault(c.case_id, []).append(v)
        vals = [x[0] if len(x) == 1 else float(np.mean(x)) for x in by_case.values()]
        n[m] = len(vals)
        n_trials[m] = sum(len(x) for x in by_case.values())
        means[m] = float(np.mean(vals)) if vals else None
        reps[m] = bootstrap_means(vals, n_boot, seed, game, m)
        ci[m] = percentile_ci(reps[m])
    return GameScore(game=game, n_cases=n_cases, cells=cells, means=means, n=n, ci=ci,
                     replicates=reps, counts=counts, extra_case_dirs=list(extra_case_dirs or []),
                     n_trials=n_trials)


@dataclass
class SystemScore:
    results: Path
    tasks_root: Path
    tolerance_s: float
    games: dict[str, GameScore]
    no_case_games: list[str]
    judge_version: str | None
    n_boot: int
    seed: int
    warnings: list[str]
    label: str = ""
    #: a Harbor job's facts (video_arena/scoring/harbor_jobs.py): job, agents, attempts, missing
    #: trials with their exception types, reward mismatches; None for a native results folder
    harbor: dict[str, Any] | None = None
    exclude_flagged: bool = False
    #: what differs among the cells (caveats.mixing): non-empty means the table is not one measurement
    mixed: list[str] = field(default_factory=list)
    #: games whose ground truth could not be checked (no manifest.json)
    gt_unchecked: list[str] = field(default_factory=list)
    #: False when scored with --no-verify-requests: Protocol A requests were not rebuilt (a caveat)
    requests_verified: bool = True

    @property
    def diagnostic(self) -> bool:
        return abs(self.tolerance_s - BENCHMARK_TOLERANCE_S) > 1e-9 or bool(self.mixed)

    @property
    def tolerance_diagnostic(self) -> bool:
        return abs(self.tolerance_s - BENCHMARK_TOLERANCE_S) > 1e-9

    def integrity_errors(self) -> list[Cell]:
        return [c for c in self.cells() if c.status == STATUS_CORRUPT]

    def caveats(self) -> dict[str, Any]:
        """The caveat counts over every game (sums), the mean of the game recall ceilings, the efforts."""
        games = list(self.games.values())
        ceil = [gs.recall_ceiling() for gs in games if gs.recall_ceiling() is not None]
        return {"n_scored": sum(gs.n_scored_cases for gs in games), "n_cases": sum(gs.n_cases for gs in games),
                "zero_rows": sum(gs.counts["zero_rows"] for gs in games),
                **{cv: sum(gs.counts[cv] for gs in games) for cv in CAVEATS},
                "t1_recall_ceiling_mean": float(np.mean(ceil)) if ceil else None,
                "reasoning_effort": _tally(c.reasoning_effort for c in self.cells() if c.status == STATUS_SCORED),
                "excluded_flagged": sum(gs.counts[STATUS_FLAGGED] for gs in games)}

    def conditions(self) -> dict[str, dict[str, int]]:
        """What the scored cells ran under, per mixing dimension (value -> cells)."""
        scored = [c for c in self.cells() if c.status == STATUS_SCORED]
        return {d: {("(not recorded)" if v is None else str(v)): n for v, n in CV.tally(scored, d).items()}
                for d in CV.MIX_DIMENSIONS + ("toolkit",)}

    def scored_games(self) -> list[str]:
        return [g for g, gs in self.games.items() if gs.scored]

    def dropped_games(self) -> dict[str, str]:
        """Games with cases but no scored cell: why each one drops out of the overall mean."""
        out = {}
        for g, gs in self.games.items():
            if not gs.scored:
                parts = [f"{gs.counts[s]} {s}" for s in STATUSES[1:] if gs.counts[s]]
                out[g] = f"0/{gs.n_cases} scored ({', '.join(parts)})"
        return out

    def overall(self, games: list[str] | None = None) -> dict[str, Any]:
        return overall_of(self, games)

    def models(self) -> dict[str, int]:
        return _tally(c.model for c in self.cells() if c.protocol or c.model)

    def protocols(self) -> dict[str, int]:
        return _tally(c.protocol for c in self.cells() if c.protocol or c.model)

    def cells(self) -> list[Cell]:
        return [c for gs in self.games.values() for c in gs.cells]

    def summary(self) -> dict[str, Any]:
        return {
            "label": self.label, "results": str(self.results), "models": self.models(),
            "protocols": self.protocols(), "diagnostic": self.diagnostic, "mixed": list(self.mixed),
            "caveats": self.caveats(), "conditions": self.conditions(),
            "exclude_flagged": self.exclude_flagged, "ground_truth_unchecked": list(self.gt_unchecked),
            "requests_verified": self.requests_verified,
            "context_overflow": CV.n_context_overflow(self.cells()),
            "integrity_errors": [{"game": c.game, "case_id": c.case_id, "reason": c.reason}
                                 for c in self.integrity_errors()],
            "games": {g: gs.summary() for g, gs in self.games.items()},
            "games_without_cases": list(self.no_case_games),
            "dropped_games": self.dropped_games(),
            "overall": self.overall(),
            "warnings": list(self.warnings),
            **({"harbor": self.harbor} if self.harbor is not None else {}),
        }


def overall_of(system: SystemScore, games: list[str] | None = None) -> dict[str, Any]:
    """Mean of game means over `games` (default: every game the system scored), per metric, with a
    stratified bootstrap interval (each game resampled on its own, replicate game means averaged)."""
    names = system.scored_games() if games is None else list(games)
    out: dict[str, Any] = {"games": names, "means": {}, "n_games": {}, "ci95": {}, "replicates": {}}
    for m in ALL_METRICS:
        gm = [(g, system.games[g]) for g in names if g in system.games and system.games[g].means[m] is not None]
        out["n_games"][m] = len(gm)
        if not gm:
            out["means"][m], out["ci95"][m], out["replicates"][m] = None, None, None
            continue
        out["means"][m] = float(np.mean([gs.means[m] for _, gs in gm]))
        reps = [gs.replicates[m] for _, gs in gm]
        if all(r is not None for r in reps):
            stacked = np.mean(np.vstack(reps), axis=0)
            out["replicates"][m] = stacked
            out["ci95"][m] = percentile_ci(stacked)
        else:
            out["replicates"][m], out["ci95"][m] = None, None
    return out


def _public_overall(o: dict[str, Any]) -> dict[str, Any]:
    return {"games": o["games"], "means": o["means"], "n_games": o["n_games"],
            "ci95": {k: (list(v) if v is not None else None) for k, v in o["ci95"].items()}}


def load_verifier(tasks_root: Path) -> Callable[[Path], tuple[bool, str]]:
    """video_arena.protocol_a.provenance.verify_cell bound to a tasks root (imported lazily)."""
    try:
        provenance = importlib.import_module("video_arena.protocol_a.provenance")
    except ImportError as exc:
        raise ScoringInputError(
            f"--verify-requests needs video_arena.protocol_a.provenance.verify_cell, which does not "
            f"import here ({exc}); score with --no-verify-requests or install the Protocol A part") from exc
    verify = getattr(provenance, "verify_cell", None)
    if not callable(verify):
        raise ScoringInputError("--verify-requests: video_arena.protocol_a.provenance has no verify_cell()")
    return lambda cell_dir: verify(cell_dir, tasks_root)


def score_results(results: str | Path, tasks_root: str | Path | None = None, *,
                  tolerance: float = BENCHMARK_TOLERANCE_S, n_boot: int = 2000, seed: int = 0,
                  verify_requests: bool = True, judge_mod=None, progress: bool | None = None,
                  label: str | None = None, exclude_flagged: bool = False) -> SystemScore:
    """Score every cell of a results folder against a tasks tree.  Raises ScoringInputError only for
    inputs that cannot be scored at all; a bad cell is reported on the cell and never stops the run."""
    from video_arena.scoring.judge_loader import load_judge

    results = Path(results).expanduser()
    try:
        root = paths.tasks_root(tasks_root)
    except FileNotFoundError as exc:
        raise ScoringInputError(str(exc)) from exc
    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance >= 0):
        raise ScoringInputError(f"tolerance must be a finite number >= 0, not {tolerance!r}")
    if n_boot < 0:
        raise ScoringInputError("--bootstrap must be >= 0")
    layout = inspect_results(results, root)
    J = judge_mod or load_judge()
    gt_check = GroundTruthCheck(root)
    verifier = load_verifier(root) if verify_requests else None
    digests = _InstructionDigests(root)
    warnings: list[str] = []

    plan: list[tuple[str, list[str], list[str]]] = []  # game, case ids, extra case dirs
    no_case_games = []
    for game in T.list_games(root):
        try:
            case_ids = [c["case_id"] for c in T.load_cases(game, root)]
        except T.TasksTreeError as exc:
            raise ScoringInputError(str(exc)) from exc
        dirs = layout.get(game, [])
        extra = sorted(set(dirs) - set(case_ids))
        if extra:
            warnings.append(f"{game}: {len(extra)} folder(s) that are not cases of the tasks tree, ignored: "
                            f"{', '.join(extra[:5])}{' ...' if len(extra) > 5 else ''}")
        if not case_ids:
            no_case_games.append(game)
            continue
        plan.append((game, case_ids, extra))

    total = sum(len(ids) for _, ids, _ in plan)
    bar = None
    if progress is not False and total:
        from tqdm import tqdm
        bar = tqdm(total=total, desc=f"scoring {results.name}", unit="cell",
                   disable=None if progress is None else False, leave=False)
    games: dict[str, GameScore] = {}
    try:
        for game, case_ids, extra in plan:
            cells = []
            for case_id in case_ids:
                gt, gt_error, corrupt = None, "", False
                cell_dir = R.cell_dir(results, game, case_id)
                if cell_dir.is_dir():  # a GT is only needed (and only reported) for a cell that exists
                    gt, gt_error, corrupt = gt_check.load(J, game, case_id)
                cell = score_cell(J, game, case_id, cell_dir, gt, gt_error, float(tolerance), digests, verifier,
                                  exclude_flagged, results / CONDITIONS_SUBDIR)
                if corrupt and cell.reason.startswith("ground truth unusable"):
                    mark_gt_corrupt(cell, gt_error)
                if cell.warnings:
                    warnings.extend(f"{game}/{case_id}: {w}" for w in cell.warnings)
                cells.append(cell)
                if bar is not None:
                    bar.update(1)
            games[game] = aggregate_game(game, len(case_ids), cells, n_boot, seed, extra)
    finally:
        if bar is not None:
            bar.close()
    system = SystemScore(results=results, tasks_root=root, tolerance_s=float(tolerance), games=games,
                         no_case_games=no_case_games, judge_version=getattr(J, "JUDGE_VERSION", None)
                         or getattr(J, "__version__", None), n_boot=n_boot, seed=seed, warnings=warnings,
                         label=label or results.name, exclude_flagged=exclude_flagged,
                         requests_verified=bool(verify_requests))
    finish_system(system, gt_check)
    for game, gs in games.items():
        shas = {c.instruction_sha256 for c in gs.cells if c.instruction_sha256 and c.status != STATUS_MISSING}
        if len(shas) > 1 and len({c.protocol for c in gs.cells if c.instruction_sha256}) == 1:
            warnings.append(f"{game}: cells were given {len(shas)} different instructions (instruction_sha256)")
    return system


# --------------------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------------------
class MixedError(ScoringInputError):
    """Cells of more than one condition, model, protocol, tolerance or reasoning effort in one table
    (or two systems of different conditions in one comparison)."""

    def __init__(self, what: str, differences: list[str]):
        self.what, self.differences = what, differences
        super().__init__(f"{what}: " + "; ".join(differences))


def compare(a: SystemScore, b: SystemScore, allow_mixed: bool = False) -> dict[str, Any]:
    """Diff two systems on the games both scored; name the games dropped and why.  Two systems whose
    cells on the shared games ran under different conditions are refused (MixedError) unless
    allow_mixed, and the comparison is then marked diagnostic."""
    if abs(a.tolerance_s - b.tolerance_s) > 1e-9:
        raise ScoringInputError(f"cannot compare results scored at {a.tolerance_s:g} s and {b.tolerance_s:g} s")
    all_games = sorted(set(a.games) | set(b.games) | set(a.no_case_games) | set(b.no_case_games))
    shared, dropped = [], {}
    for g in all_games:
        ga, gb = a.games.get(g), b.games.get(g)
        why = []
        for name, gs in (("A", ga), ("B", gb)):
            if gs is None:
                why.append(f"{name}: no cases")
            elif not gs.scored:
                why.append(f"{name}: 0/{gs.n_cases} scored")
        if why:
            dropped[g] = ", ".join(why)
        else:
            shared.append(g)
    differences = CV.compare_mixing([c for g in shared for c in a.games[g].cells if c.status == STATUS_SCORED],
                                    [c for g in shared for c in b.games[g].cells if c.status == STATUS_SCORED])
    if differences and not allow_mixed:
        raise MixedError("cannot compare: the two systems ran under different conditions on the shared games "
                         "(--allow-mixed shows it as a DIAGNOSTIC)", differences)
    per_game = {}
    for g in shared:
        ga, gb = a.games[g], b.games[g]
        entry: dict[str, Any] = {"n_scored": [ga.n_scored_cases, gb.n_scored_cases],
                                 "n_cases": [ga.n_cases, gb.n_cases], "n_scored_trials": [ga.n_scored, gb.n_scored]}
        for m in ALL_METRICS:
            ma, mb = ga.means[m], gb.means[m]
            d = None if ma is None or mb is None else ma - mb
            ra, rb = ga.replicates[m], gb.replicates[m]
            dci = percentile_ci(ra - rb) if ra is not None and rb is not None and len(ra) == len(rb) else None
            entry[m] = {"a": ma, "b": mb, "diff": d, "diff_ci95": list(dci) if dci else None,
                        "ratio": (ma / mb) if (ma is not None and mb) else None}
        per_game[g] = entry
    oa, ob = a.overall(shared), b.overall(shared)
    overall: dict[str, Any] = {}
    for m in ALL_METRICS:
        ma, mb = oa["means"][m], ob["means"][m]
        ra, rb = oa["replicates"][m], ob["replicates"][m]
        dci = percentile_ci(ra - rb) if ra is not None and rb is not None and len(ra) == len(rb) else None
        overall[m] = {"a": ma, "b": mb, "diff": None if ma is None or mb is None else ma - mb,
                      "diff_ci95": list(dci) if dci else None,
                      "ratio": (ma / mb) if (ma is not None and mb) else None,
                      "n_games": [oa["n_games"][m], ob["n_games"][m]]}
    own_a, own_b = a.overall(), b.overall()
    return {
        "a": {"label": a.label, "results": str(a.results)},
        "b": {"label": b.label, "results": str(b.results)},
        "shared_games": shared, "dropped_games": dropped, "games": per_game, "overall_shared": overall,
        "diagnostic": bool(differences) or a.diagnostic or b.diagnostic, "mixed": differences,
        "own_overall_not_comparable": {
            "a": {"reward": own_a["means"]["reward"], "games": own_a["games"]},
            "b": {"reward": own_b["means"]["reward"], "games": own_b["games"]},
        },
    }


# --------------------------------------------------------------------------------------------------
# outputs
# --------------------------------------------------------------------------------------------------
def to_json(systems: list[SystemScore], comparison: dict[str, Any] | None = None) -> dict[str, Any]:
    s0 = systems[0]
    doc: dict[str, Any] = {
        "format": SCORE_FORMAT,
        "tasks_root": str(s0.tasks_root),
        "tolerance_s": s0.tolerance_s,
        "diagnostic": s0.diagnostic,
        "judge_version": s0.judge_version,
        "bootstrap": {"n": s0.n_boot, "seed": s0.seed, "level": 0.95, "method": "percentile"},
        "t2_t3_rule": ("headline t2_macro_acc/t3_macro_acc: mean over scored cells where the tier is computable "
                       "(>= 1 T1 match), own n; t2_zero_filled/t3_zero_filled: every scored cell, no match = 0.0 "
                       "(Harbor's reward.json)"),
        "systems": [],
    }
    for s in systems:
        summ = s.summary()
        summ["overall"] = _public_overall(s.overall())
        summ["cells"] = [c.to_row() for c in s.cells()]
        doc["systems"].append(summ)
    if comparison is not None:
        doc["compare"] = comparison
    return doc


CSV_FIELDS = ["system", "game", "n_cases", "n_scored", "n_scored_cases", "n_cells", "missing", "diagnostic",
              "unverified", "flagged_excluded", "corrupt", "context_overflow", "zero_rows",
              "format_errors", "reward", "reward_ci_lo", "reward_ci_hi", "t1_f1", "t1_f1_ci_lo", "t1_f1_ci_hi",
              "t2_macro_acc", "n_t2", "t3_macro_acc", "n_t3", "t2_zero_filled", "t3_zero_filled",
              "degraded", "truncated", "multi_block", "audit_flagged", "redrawn", "over_turns", "no_isolation",
              "allow_paths", "preflight_warned", "t1_recall_ceiling_mean", "reasoning_effort",
              "in_overall", "table_diagnostic", "mixed"]


def _efforts_str(t: dict[str, int]) -> str:
    return "; ".join(f"{k} ({v})" for k, v in t.items())


def csv_rows(systems: list[SystemScore]) -> list[dict[str, Any]]:
    rows = []
    for s in systems:
        overall = s.overall()
        for g, gs in s.games.items():
            r = {"system": s.label, "game": g, "n_cases": gs.n_cases, "n_scored": gs.n_scored,
                 "n_scored_cases": gs.n_scored_cases, "n_cells": len(gs.cells),
                 "missing": gs.counts[STATUS_MISSING], "diagnostic": gs.counts[STATUS_DIAGNOSTIC],
                 "unverified": gs.counts[STATUS_UNVERIFIED], "zero_rows": gs.counts["zero_rows"],
                 "context_overflow": CV.n_context_overflow(gs.cells),
                 "flagged_excluded": gs.counts[STATUS_FLAGGED], "corrupt": gs.counts[STATUS_CORRUPT],
                 "format_errors": gs.counts["format_error"], "in_overall": g in overall["games"],
                 "t1_recall_ceiling_mean": gs.recall_ceiling(), "reasoning_effort": _efforts_str(gs.efforts()),
                 "table_diagnostic": s.diagnostic, "mixed": "; ".join(s.mixed)}
            for cv in CAVEATS:
                r[cv] = gs.counts[cv]
            for m in ALL_METRICS:
                r[m] = gs.means[m]
            for m in ("reward", "t1_f1"):
                ci = gs.ci[m]
                r[f"{m}_ci_lo"], r[f"{m}_ci_hi"] = (ci if ci else (None, None))
            r["n_t2"], r["n_t3"] = gs.n["t2_macro_acc"], gs.n["t3_macro_acc"]
            rows.append(r)
        r = {k: None for k in CSV_FIELDS}
        cv_all = s.caveats()
        tot = {k: sum(gs.counts[k] for gs in s.games.values()) for k in STATUSES + ("zero_rows", "format_error")}
        r.update({"system": s.label, "game": "OVERALL", "n_cases": sum(gs.n_cases for gs in s.games.values()),
                  "n_scored": tot[STATUS_SCORED], "n_scored_cases": cv_all["n_scored"],
                  "n_cells": sum(len(gs.cells) for gs in s.games.values()), "missing": tot[STATUS_MISSING],
                  "diagnostic": tot[STATUS_DIAGNOSTIC], "unverified": tot[STATUS_UNVERIFIED],
                  "flagged_excluded": tot[STATUS_FLAGGED], "corrupt": tot[STATUS_CORRUPT],
                  "zero_rows": tot["zero_rows"], "format_errors": tot["format_error"], "in_overall": True,
                  "context_overflow": CV.n_context_overflow(s.cells()),
                  "t1_recall_ceiling_mean": cv_all["t1_recall_ceiling_mean"],
                  "reasoning_effort": _efforts_str(cv_all["reasoning_effort"]),
                  "table_diagnostic": s.diagnostic, "mixed": "; ".join(s.mixed)})
        for cv in CAVEATS:
            r[cv] = cv_all[cv]
        for m in ALL_METRICS:
            r[m] = overall["means"][m]
        for m in ("reward", "t1_f1"):
            ci = overall["ci95"][m]
            r[f"{m}_ci_lo"], r[f"{m}_ci_hi"] = (ci if ci else (None, None))
        rows.append(r)
    return rows


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


def mixing_cells(system: "SystemScore") -> list[Cell]:
    """The cells a mixing check looks at: every cell that ran and reached the judge's gates (scored,
    excluded or corrupt), not the missing ones (they add nothing to a number)."""
    return [c for c in system.cells() if c.status != STATUS_MISSING]


def finish_system(system: "SystemScore", gt_check: "GroundTruthCheck | None" = None) -> None:
    """What every scored source gets after its cells: the mixing check, the unchecked ground truths."""
    system.mixed = CV.mixing(mixing_cells(system))
    if gt_check is not None and gt_check.unchecked_games:
        system.gt_unchecked = sorted(g for g in gt_check.unchecked_games if g in system.games)
        if system.gt_unchecked:
            system.warnings.append(f"ground truth not checked against a manifest (no manifest.json): "
                                   f"{', '.join(system.gt_unchecked)}")

