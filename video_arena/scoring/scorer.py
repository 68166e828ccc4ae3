"""Score a native results folder (`<out>/<game>/<case_id>/`) against a tasks tree.

Each cell is read by video_arena/scoring/cells.py, the game means and intervals are
video_arena/scoring/statistics.py, the outputs video_arena/scoring/output.py; a Harbor job is
video_arena/scoring/harbor_jobs.py.  The rules are written once, in docs/SCORING.md.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

from video_arena import paths, safe_io
from video_arena.core import results as R
from video_arena.core import tasks as T
from video_arena.core.condition import CONDITIONS_SUBDIR, ConditionFiles
from video_arena.scoring.cells import (BENCHMARK_TOLERANCE_S, STATUS_MISSING, CellFolder, GroundTruthCheck,
                                       ScoringInputError, InstructionDigests, load_verifier, mark_gt_corrupt,
                                       score_cell)
from video_arena.scoring.statistics import GameScore, SystemScore, aggregate_game, finish_system
from video_arena.core.judge_loader import load_judge


def _visible_dirs(folder: Path) -> list[Path]:
    """The real sub-folders of a results or game folder that are not hidden ('.', '_'); never a link."""
    return [p for p in safe_io.entries(folder)[0] if not p.name.startswith("_")]


def _refuse_links(folder: Path, names) -> None:
    """A link in a results folder where the scorer reads (a game folder, `_conditions`) refuses it: every
    folder below the one the user named must be a real folder, reached through no link."""
    for link in safe_io.entries(folder)[1]:
        if link.name in names:
            raise ScoringInputError(f"{link} is a symbolic link (to {os.readlink(link)[:200]!r}): a results folder's "
                                    f"game folders and {CONDITIONS_SUBDIR}/ are real folders, and no link in it "
                                    f"is followed")


def inspect_results(results: Path, tasks_root: Path) -> dict[str, list[str]]:
    """{game: [case folder names]} of a results folder; raises ScoringInputError when it is not one."""
    if not results.exists():
        raise ScoringInputError(f"results folder {results} does not exist")
    if not results.is_dir():
        raise ScoringInputError(f"results folder {results} is not a directory")
    known = T.list_games(tasks_root)
    _refuse_links(results, {*known, CONDITIONS_SUBDIR})
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
    return {d.name: [c.name for c in _visible_dirs(d)] + [c.name for c in safe_io.entries(d)[1]] for d in subdirs}


def score_results(results: str | Path, tasks_root: str | Path | None = None, *,
                  tolerance: float = BENCHMARK_TOLERANCE_S, n_boot: int = 2000, seed: int = 0,
                  verify_requests: bool = True, judge_mod=None, progress: bool | None = None,
                  label: str | None = None, exclude_flagged: bool = False, runner_records: bool = True) -> SystemScore:
    """Score every cell of a results folder against a tasks tree.  Raises ScoringInputError only for
    inputs that cannot be scored at all; a bad cell is reported on the cell and never stops the run.
    `runner_records` False: the caller wrote the answers directly (the baselines' oracle, nop and grid
    ceiling): their records are asked for the answer's digest only, not for run-a's or run-b's others."""

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
    conditions = ConditionFiles()  # one reader per run: each condition file read once
    verifier = load_verifier(root, conditions) if verify_requests else None
    digests = InstructionDigests(root)
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
        # deferred: tqdm (about 0.1 s of CPU), only for a bar on a terminal
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
                source = CellFolder(cell_dir, results / CONDITIONS_SUBDIR, conditions, runner_records)
                cell = score_cell(J, source, game, case_id, gt, gt_error, float(tolerance), digests, verifier,
                                  exclude_flagged)
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
