"""Score a Harbor job folder by the rules of a native results folder (docs/SCORING.md, "Scoring a
Harbor job": which trials are missing, which are scored on what the agent left, the reward check,
attempts).

A trial folder is read by video_arena/harbor_api/trials.py (`read_trial`, one `Trial` type); each trial
is one cell (a `HarborCell`), scored by `cells.score_cell` with the trial as its source (`TrialCell`),
the steps of a native cell, and the cells go through the scorer's own aggregation
(`statistics.aggregate_game`), so means, n, intervals, dropped games and `--compare` are the native ones.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from video_arena import paths
from video_arena.core import condition_fields as CF
from video_arena import safe_io
from video_arena.core import results as R
from video_arena.core import tasks as T
from video_arena.core.condition import CONDITIONS_SUBDIR, ConditionFiles
from video_arena.harbor_api import trials as TR
from video_arena.scoring import caveats as CV
from video_arena.scoring import cells as SC
from video_arena.scoring import scorer as S
from video_arena.scoring import statistics as SS
from video_arena.core.judge_loader import load_judge

#: Exceptions with which the *agent* stopped and the verifier still graded what it left (the
#: equivalents of a native run's `timeout` and `agent_error` stops, which are scored): the trial is
#: scored.  Every other recorded exception makes the trial missing.
AGENT_STOP_EXCEPTIONS = frozenset({
    "AgentTimeoutError",           # the agent's wall clock (native: stop_reason "timeout")
    "NonZeroAgentExitCodeError",   # the agent's process exited non-zero (native: "agent_error")
    "ContextWindowExceededError", "ContextLengthExceededError",
    "OutputTokenExceededError", "OutputLengthExceededError",
})
REWARD_KEYS = SC.METRICS  # the judge's REWARD_KEYS
REWARD_ATOL = 1e-9
ANSWER_ARTIFACT = TR.ANSWER_ARTIFACT
HARBOR_CELL_FIELDS = ["trial", "attempt", "exception_type", "harbor_reward", "reward_mismatch", "audit_source"]
#: The most attempts per task a job's config.json may name (`n_attempts`, Harbor's -k): a larger or
#: non-integer one is read as not recorded (1), with a warning.
MAX_ATTEMPTS = 1000


# --------------------------------------------------------------------------------------------------
# detection (the trial folder layout and its reader are video_arena/harbor_api/trials.py)
# --------------------------------------------------------------------------------------------------
is_harbor_job = TR.is_harbor_job
trial_dirs = TR.trial_dirs
read_trial = TR.read_trial
split_task_key = TR.split_task_key
Trial = TR.Trial


def _not_a_source_hint(p: Path) -> str | None:
    """Why a folder that is neither a results folder nor a job looks like part of a Harbor run."""
    if not p.is_dir():
        return None
    if TR.is_one_trial(p):
        return f"{p} is one Harbor trial; pass its job folder ({p.parent})"
    jobs = [d.name for d in sorted(p.iterdir()) if d.is_dir() and is_harbor_job(d)]
    if jobs:
        return (f"{p} holds Harbor jobs ({', '.join(jobs[:5])}{' ...' if len(jobs) > 5 else ''}): "
                f"pass one job folder")
    return None


def score_any(path: str | Path, tasks_root: str | Path | None = None, **kw) -> SS.SystemScore:
    """`video-arena score`'s entry: a Harbor job folder or a native results folder."""
    p = Path(path).expanduser()
    if is_harbor_job(p):
        return score_job(p, tasks_root, **kw)
    try:
        return S.score_results(p, tasks_root, **kw)
    except SC.ScoringInputError as exc:
        hint = _not_a_source_hint(p)
        if hint:
            raise SC.ScoringInputError(hint) from exc
        raise


# --------------------------------------------------------------------------------------------------
# one trial
# --------------------------------------------------------------------------------------------------
@dataclass
class HarborCell(SC.Cell):
    trial: str = ""
    attempt: int | None = None
    exception_type: str | None = None
    exception_message: str | None = None
    harbor_rewards: dict[str, Any] | None = None
    reward_mismatch: str = ""
    started_at: str | None = None
    audit_source: str = ""

    def to_row(self) -> dict[str, Any]:
        row = super().to_row()
        row.update(trial=self.trial, attempt=self.attempt, exception_type=self.exception_type,
                   harbor_reward=(_finite_or_repr(self.harbor_rewards) or {}).get(SC.REWARD),
                   reward_mismatch=self.reward_mismatch, audit_source=self.audit_source)
        return row


def _finite_or_repr(d: dict[str, Any] | None) -> dict[str, Any] | None:
    """JSON-safe copy (a hand-edited result.json may hold NaN, or an integer of 401 digits), each value
    cut to 80 characters when it is not a finite number."""
    if d is None:
        return None
    return {str(k)[:80]: (v if safe_io.finite_number(v) is not None else repr(v)[:80]) for k, v in d.items()}


def reward_mismatch(harbor: dict[str, Any], rejudged: dict[str, float]) -> str:
    """'' when Harbor's rewards equal the re-judged ones within REWARD_ATOL on every key Harbor has
    (`reward` must be there), else a description of the differences."""
    diffs = []
    if SC.REWARD not in harbor:
        diffs.append(f"no '{SC.REWARD}' key in Harbor's rewards")
    for k in REWARD_KEYS:
        if k not in harbor:
            continue
        v = safe_io.finite_number(harbor[k])  # a 401-digit integer or NaN differs, never an OverflowError
        if v is None or abs(v - float(rejudged[k])) > REWARD_ATOL:
            diffs.append(f"{k} Harbor {repr(harbor[k])[:40]} vs judge {rejudged[k]:.6g}")
    return "; ".join(diffs)


class TrialCell(SC.CellSource):
    """A Harbor trial as the source of one cell (`cells.score_cell`): its result.json says whether it ran
    and what Harbor's verifier gave, the collected artifact is the answer, and a Protocol A trial's agent/
    folder is a native cell (its run.json is read as one); any other agent's trajectory gets Protocol B's
    egress audit and its turns counted."""

    absent_answer_state = "no_artifact"

    def __init__(self, trial: Trial, conditions: ConditionFiles | None = None):
        self.trial = trial
        self.record_dir = trial.agent_dir
        self.conditions_dir = trial.agent_dir / CONDITIONS_SUBDIR
        self.conditions = conditions
        # The artifact is read only through real folders of the trial: when `artifacts/` or `app/` is a
        # link, the link itself is what is read (a read that never follows it: unreadable, no answer).
        self.answer_path = safe_io.link_below(trial.dir, trial.answer_path) or trial.answer_path
        self.answer_label = f"trial {trial.dir.name}: answer artifact"
        self.agent_record: R.RunRecord | None = None

    def new_cell(self, game: str, case_id: str) -> HarborCell:
        return HarborCell(game=game, case_id=case_id, status=SC.STATUS_MISSING, trial=self.trial.dir.name,
                          protocol=self.trial.protocol, model=self.trial.model)

    def warning(self, text: str) -> str:
        return f"trial {self.trial.dir.name}: {text}"

    def read(self, cell: HarborCell) -> bool:
        trial = self.trial
        if trial.result is None:
            cell.reason = trial.error
            if "unreadable" in trial.error:
                cell.warnings.append(self.warning(trial.error))
            return False
        if cell.protocol is None and any(t in CV.CONTEXT_OVERFLOW for t, _ in trial.exceptions):
            cell.protocol = "A"  # only the Protocol A agent raises it (its verifier, which names the protocol, never ran)
        cell.started_at = str(trial.result.get("started_at") or "") or None
        return True

    def names_other_cell(self, game: str, case_id: str) -> str:
        jc = self.trial.judge_case or {}
        for key, expected in (("game", game), ("case_id", case_id)):
            if jc.get(key) is not None and jc[key] != expected:
                return f"verifier/judge.json names {key} {jc[key]!r}, the trial's task is {expected!r}"
        return ""

    def run_record(self, cell: HarborCell) -> R.RunRecord | None:
        rec, err = self.trial.agent_run(cell.protocol)   # any other agent's transcript is audited instead
        if err:
            cell.warnings.append(self.warning(f"agent/{err}"))
        self.agent_record = rec
        return rec

    def read_own_caveats(self, cell: HarborCell) -> None:
        trial = self.trial
        cell.condition = {**CF.harbor_condition(trial.trial_config()), **cell.condition}
        if self.agent_record is not None:
            return
        cell.reasoning_effort, cell.effort_recorded = trial.agent_reasoning_effort()
        if cell.protocol != "A":
            a = CV.audit_harbor_agent(trial.agent_dir)
            cell.audit_verdict, cell.turns_used, cell.audit_source = a["verdict"], a["turns_used"], a["source"]
            # the agent's own cap (--ak)
            CV.read_run_conduct(cell, R.ProtocolBRecord(max_turns=trial.agent_kwargs().get("max_turns")),
                                runner_record=False)
            if not cell.effort_recorded and a["efforts"]:
                cell.reasoning_effort, cell.effort_recorded = ",".join(sorted(a["efforts"])), True

    def finished(self, cell: HarborCell) -> bool:
        trial = self.trial
        rewards = trial.rewards or None
        cell.harbor_rewards = dict(rewards) if rewards else None
        if trial.exceptions:
            cell.exception_type, cell.exception_message = trial.exceptions[0]
            cell.stop_reason = cell.exception_type
        else:
            cell.stop_reason = "completed"
        overflow = [(t, m) for t, m in trial.exceptions if t in CV.CONTEXT_OVERFLOW]
        harness = [(t, m) for t, m in trial.exceptions
                   if t not in AGENT_STOP_EXCEPTIONS and t not in CV.CONTEXT_OVERFLOW]
        if overflow and not harness:
            # the Protocol A agent's request was over the model's context: the system's own limit, 0.0 on
            # every metric (the one rule: cells.score_overflow), whatever the verifier did or did not grade
            cell.stop_reason = overflow[0][0]
            return True
        if harness:
            t, m = harness[0]
            cell.exception_type, cell.exception_message = t, m
            first = m.strip().splitlines()[0] if m.strip() else ""
            cell.reason = f"{t}{': ' + first[:120] if first else ''}"
            return False
        if rewards is None:
            cell.reason = "no verifier result (no rewards recorded)"
            return False
        if trial.result.get("reward_valid") is False:
            cell.reason = "reward_valid is false"
            return False
        return True

    def rebuildable(self) -> bool:
        return safe_io.real_dir(self.trial.dir, self.trial.agent_dir) is not None

    def before_judging(self, cell: HarborCell) -> None:
        if self.trial.judge_error:
            cell.warnings.append(self.warning(f"the verifier reported an error ({self.trial.judge_error}); "
                                              f"re-judged here"))

    def says_answer_left(self, cell: HarborCell) -> bool:
        # the Protocol A agent's own record says it left an answer: a vanished artifact is an integrity
        # error naming the trial, as in a native cell, not a 0.0
        rec = self.agent_record
        return rec is not None and rec.ran and rec.answer_state not in SC.NO_ANSWER_STATES

    def vanished_answer(self, cell: HarborCell) -> str:
        return (f"INTEGRITY: trial {self.trial.dir.name}: the answer artifact is missing, the agent's run.json "
                f"says it left one (answer_state {self.agent_record.answer_state}); not scored")

    def no_answer_reason(self, state: str | None) -> str:
        return "no answer artifact (never written or not collected): 0.0"

    def answer_sha256(self) -> Any:
        return self.agent_record.answer_sha256 if self.agent_record is not None else None

    def record_gaps(self, cell: HarborCell) -> str:
        # the Protocol A agent's agent/run.json is run-a's record (protocol_a/request_cell.py); any other agent's
        # trial has no toolkit record, and Harbor's own files are read as Harbor writes them
        rec = self.agent_record
        return R.digests_problem(rec, f"trial {self.trial.dir.name}: agent/{R.RUN_FILE}") if rec is not None else ""

    def after_judging(self, judge_mod, cell: HarborCell, tolerance: float) -> None:
        if cell.exception_type:
            cell.reason = f"{cell.exception_type}: scored on what the agent left"
        if abs(tolerance - SC.BENCHMARK_TOLERANCE_S) < 1e-9:  # Harbor's verifier judges at the benchmark's
            cell.reward_mismatch = reward_mismatch(cell.harbor_rewards, judge_mod.reward_of(cell.record))


# --------------------------------------------------------------------------------------------------
# the job
# --------------------------------------------------------------------------------------------------
def _job_facts(job: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    agents = []
    for a in cfg.get("agents") or []:
        if isinstance(a, dict):
            who = a.get("name") or a.get("import_path") or "?"
            agents.append(f"{who}:{a['model_name']}" if a.get("model_name") else who)
    budget = {k: cfg.get(k) for k in ("timeout_multiplier", "agent_timeout_multiplier",
                                      "agent_setup_timeout_multiplier", "verifier_timeout_multiplier")
              if cfg.get(k) not in (None, 1, 1.0)}
    n_attempts = safe_io.whole_number(cfg.get("n_attempts"), 1, MAX_ATTEMPTS) or 1
    return {"job": str(cfg.get("job_name") or job.name), "agents": agents, "n_attempts": n_attempts,
            "changed_budget": budget,
            "verifier_disabled": bool((cfg.get("verifier") or {}).get("disable"))
            if isinstance(cfg.get("verifier"), dict) else False}


def score_job(job: str | Path, tasks_root: str | Path | None = None, *,
              tolerance: float = SC.BENCHMARK_TOLERANCE_S, n_boot: int = 2000, seed: int = 0,
              verify_requests: bool = True, judge_mod=None, progress: bool | None = None,
              label: str | None = None, exclude_flagged: bool = False) -> SS.SystemScore:
    """Score a Harbor job folder against a tasks tree (same arguments as scorer.score_results)."""

    job = Path(job).expanduser()
    if not is_harbor_job(job):
        raise SC.ScoringInputError(f"{job} is not a Harbor job folder (config.json plus trial folders)")
    try:
        root = paths.tasks_root(tasks_root)
    except FileNotFoundError as exc:
        raise SC.ScoringInputError(str(exc)) from exc
    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance >= 0):
        raise SC.ScoringInputError(f"tolerance must be a finite number >= 0, not {tolerance!r}")
    if n_boot < 0:
        raise SC.ScoringInputError("--bootstrap must be >= 0")
    links = TR.linked_entries(job)
    if links:
        raise SC.ScoringInputError(
            f"{links[0]} is a symbolic link (to {os.readlink(links[0])[:200]!r}): a Harbor job's trial folders are "
            f"real folders, and no link in a job is followed")
    cfg = TR.read_job_config(job)
    facts = _job_facts(job, cfg)
    J = judge_mod or load_judge()
    conditions = ConditionFiles()
    verifier = SC.load_verifier(root, conditions) if verify_requests else None
    gt_check = SC.GroundTruthCheck(root)
    warnings: list[str] = []
    if cfg.get("n_attempts") is not None and safe_io.whole_number(cfg["n_attempts"], 1, MAX_ATTEMPTS) is None:
        warnings.append(f"config.json n_attempts {repr(cfg['n_attempts'])[:40]} is not an integer from 1 to "
                        f"{MAX_ATTEMPTS}: read as not recorded (1 attempt per task)")

    case_lists: dict[str, list[str]] = {}
    no_case_games = []
    for game in T.list_games(root):
        try:
            ids = [c["case_id"] for c in T.load_cases(game, root)]
        except T.TasksTreeError as exc:
            raise SC.ScoringInputError(str(exc)) from exc
        if ids:
            case_lists[game] = ids
        else:
            no_case_games.append(game)
    case_sets = {g: set(ids) for g, ids in case_lists.items()}

    dirs = trial_dirs(job)
    by_case: dict[tuple[str, str], list[Trial]] = {}
    strays: list[str] = []
    for d in dirs:
        t = read_trial(d)
        gc = split_task_key(t.task_key, case_sets) if t.task_key else None
        if gc is None:
            strays.append(f"{d.name} ({t.task_key_source or 'no task name'}: {t.task_key or '-'})")
            continue
        by_case.setdefault(gc, []).append(t)
    if strays:
        warnings.append(f"{len(strays)} trial(s) whose task is not a case of the tasks tree {root}, ignored: "
                        f"{', '.join(strays[:5])}{' ...' if len(strays) > 5 else ''}")
    if not by_case:
        raise SC.ScoringInputError(
            f"{job}: no trial is a case of the tasks tree {root} (task names video-arena/<game>-<case_id>); "
            f"pass the tasks tree the dataset was generated from with --tasks-root")

    bar = None
    if progress is not False:
        # deferred: tqdm (about 0.1 s of CPU), only for a bar on a terminal
        from tqdm import tqdm
        bar = tqdm(total=len(dirs) - len(strays), desc=f"scoring {job.name}", unit="trial",
                   disable=None if progress is None else False, leave=False)
    games: dict[str, SS.GameScore] = {}
    k = facts["n_attempts"]
    try:
        for game, ids in case_lists.items():
            cells: list[SC.Cell] = []
            for case_id in ids:
                trials = sorted(by_case.get((game, case_id), []),
                                key=lambda t: (str((t.result or {}).get("started_at") or "~"), t.dir.name))
                gt, gt_error, corrupt = None, "", False
                if trials:
                    gt, gt_error, corrupt = gt_check.load(J, game, case_id)
                if len(trials) > k:
                    warnings.append(f"{game}/{case_id}: {len(trials)} trials for {k} attempt(s) per task; all scored")
                for i, t in enumerate(trials, 1):
                    c = SC.score_cell(J, TrialCell(t, conditions), game, case_id, gt, gt_error, float(tolerance), None,
                                      verifier, exclude_flagged)
                    if corrupt and c.reason.startswith("ground truth unusable"):
                        SC.mark_gt_corrupt(c, gt_error)
                    c.attempt = i
                    warnings.extend(f"{game}/{case_id}: {w}" for w in c.warnings)
                    cells.append(c)
                    if bar is not None:
                        bar.update(1)
                for i in range(len(trials) + 1, k + 1):
                    cells.append(HarborCell(game=game, case_id=case_id, status=SC.STATUS_MISSING, attempt=i,
                                            reason="not run (no trial folder)" if not trials
                                            else "attempt not run (no trial folder)"))
            games[game] = SS.aggregate_game(game, len(ids), cells, n_boot, seed)
    finally:
        if bar is not None:
            bar.close()

    system = SS.SystemScore(results=job, tasks_root=root, tolerance_s=float(tolerance), games=games,
                           no_case_games=no_case_games, judge_version=getattr(J, "JUDGE_VERSION", None)
                           or getattr(J, "__version__", None), n_boot=n_boot, seed=seed, warnings=warnings,
                           label=label or job.name, exclude_flagged=exclude_flagged,
                           requests_verified=bool(verify_requests))
    cells = [c for c in system.cells() if isinstance(c, HarborCell)]
    ran = [c for c in cells if c.trial]
    missing = [c for c in ran if c.status == SC.STATUS_MISSING]
    facts.update(
        n_trials=len(ran),
        n_not_run=sum(1 for c in cells if not c.trial),
        missing=[{"game": c.game, "case_id": c.case_id, "attempt": c.attempt, "trial": c.trial,
                  "exception_type": c.exception_type, "reason": c.reason} for c in missing],
        missing_by_type=SS.count_values(c.exception_type or c.reason for c in missing),
        agent_stops_scored=SS.count_values(c.exception_type for c in ran
                                    if c.status == SC.STATUS_SCORED and c.exception_type),
        reward_checked=sum(1 for c in ran if c.status == SC.STATUS_SCORED) if abs(
            tolerance - SC.BENCHMARK_TOLERANCE_S) < 1e-9 else 0,
        mismatches=[{"game": c.game, "case_id": c.case_id, "attempt": c.attempt, "trial": c.trial,
                     "harbor": _finite_or_repr(c.harbor_rewards), "judge": J.reward_of(c.record),
                     "diff": c.reward_mismatch}
                    for c in ran if c.reward_mismatch],
    )
    system.harbor = facts
    SS.finish_system(system, gt_check)
    if facts["changed_budget"]:
        warnings.append(f"the job changed the budget ({facts['changed_budget']}): not the benchmark's condition "
                        f"(docs/HARBOR.md)")
    return system


# --------------------------------------------------------------------------------------------------
# text
# --------------------------------------------------------------------------------------------------
def format_lines(s: SS.SystemScore, limit: int = 20) -> list[str]:
    h = s.harbor or {}
    lines = [f"  harbor job {h.get('job')}: agent(s) {', '.join(h.get('agents') or []) or '-'}; "
             f"{h.get('n_attempts')} attempt(s) per task (-k); {h.get('n_trials')} trial folder(s)"
             + (f", {h['n_not_run']} attempt(s) with no trial folder" if h.get("n_not_run") else "")]
    if h.get("agent_stops_scored"):
        lines.append("  scored although the agent stopped with an exception: "
                     + ", ".join(f"{k} {v}" for k, v in h["agent_stops_scored"].items()))
    miss = h.get("missing") or []
    if miss:
        lines.append(f"  missing trials ({len(miss)}; not in any mean): "
                     + ", ".join(f"{k} {v}" for k, v in h["missing_by_type"].items()))
        for m in miss[:limit]:
            lines.append(f"    missing {m['game']}/{m['case_id']} attempt {m['attempt']} ({m['trial']}): {m['reason']}")
        if len(miss) > limit:
            lines.append(f"    ... {len(miss) - limit} more (see --json / --cells-csv)")
    mm = h.get("mismatches") or []
    if mm:
        lines.append(f"  REWARD MISMATCH in {len(mm)} trial(s): Harbor's reward.json differs from the checkout's "
                     f"judge on the tasks tree's ground truth (a stale judge or ground truth in the dataset?); "
                     f"the re-judged values are the ones reported")
        for m in mm[:limit]:
            lines.append(f"    {m['game']}/{m['case_id']} attempt {m['attempt']} ({m['trial']}): {m['diff']}")
        if len(mm) > limit:
            lines.append(f"    ... {len(mm) - limit} more (see --json)")
    elif h.get("reward_checked"):
        lines.append(f"  reward check: {h['reward_checked']} scored trial(s) re-judged, every one equal to "
                     f"Harbor's reward.json (within {REWARD_ATOL:g})")
    elif s.diagnostic:
        lines.append("  reward check skipped: Harbor's verifier judges at the benchmark tolerance")
    return lines
