"""`video-arena explore RESULTS [--compare OTHER] -o DIR`: a static results explorer for a browser.

    video-arena explore results/a-mymodel -o site/            # then open site/index.html
    video-arena explore jobs/2026-11-30__12-00-00 --compare results/a-other -o site/

It works on a native results folder (Protocol A or B) and on a Harbor job folder, scores them with the
scorer (`video-arena score`'s own code, so every number equals the score table's) and writes:

    index.html                 the score table (n, 95 % intervals, caveats), the chart, the conditions
    games/<game>.html          every case with its scores and caveats (sortable)
    cases/<game>/<case>.html   per case, one column per cell (side by side with --compare): the
                               timeline, the events table (matched / label wrong / missed / extra),
                               the judge's record, the run record, Protocol A's stills and reply,
                               Protocol B's log tail and answer-state history
    img/, stills/              PNG timelines and chart, JPEG thumbnails of the stills

Nothing needs a server or the network: plain HTML, one CSS file and a few lines of JavaScript for
sorting.  The site can be shared: host paths, keys and environments are scrubbed (cells.Scrubber),
and the ground truth appears only on the case pages, which show it by design.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import html
import json
import math
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from video_arena import paths
from video_arena.core import results as R
from video_arena.core.tasks import TasksTree
from video_arena.explore import cell_view as C
from video_arena.explore import stills as ST
from video_arena.scoring import caveats as CV
from video_arena.scoring import cells as SC
from video_arena.scoring import output as SO
from video_arena.scoring import statistics as SS
from video_arena.core.judge_loader import load_judge
from video_arena.core.tasks import parse_game_toml
from video_arena.scoring import harbor_jobs as HJ
from video_arena.safe_io import finite_number

SITE_MARKER = ".video-arena-explore"
TEMPLATES = Path(__file__).resolve().parent / "templates"


# --------------------------------------------------------------------------------------------------
# what is drawn: plain data for the templates
# --------------------------------------------------------------------------------------------------
@dataclass
class CellView:
    system: str
    system_index: int
    cell: SC.Cell
    files: C.CellFiles
    status: str
    scores: dict[str, float | None]
    caveats: list[str]
    run: dict[str, Any] | None = None
    harbor_result: dict[str, Any] | None = None
    timeline: str | None = None
    timeline_note: str = ""
    rows: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    stills: list[dict[str, Any]] = field(default_factory=list)
    stills_note: str = ""
    reply: str | None = None
    reply_cut: bool = False
    logs: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    label: str = ""


def _fmt(v: Any, nd: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return "–" if not math.isfinite(v) else f"{v:.{nd}f}"
    return str(v)


def _mmss(t: float | None) -> str:
    """m:ss.s of a video time; a time no match lasts (an answer row at t = 1e300 is valid for the judge)
    is shown as the number it is."""
    if t is None:
        return "–"
    f = finite_number(t)
    if f is None:  # an integer no float holds (401 digits): shown, never converted
        return f"{str(t)[:24]}… s" if len(str(t)) > 24 else f"{t} s"
    t = f
    if abs(t) >= 1e7:
        return f"{t:g} s"
    return f"{int(t // 60)}:{t % 60:04.1f}"


def _ci(ci) -> str:
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def cell_caveats(cell: SC.Cell) -> list[str]:
    """What makes a cell less than a clean measurement: the scorer's own caveat fields (caveats.py)."""
    out = [] if cell.status == SC.STATUS_SCORED else [cell.status]
    if cell.context_overflow:
        out.append("context overflow (0.0)")
    if cell.content_filtered:
        out.append("content filter")
    if cell.degraded:
        out.append("degraded" + (f" ({cell.degradations})" if cell.degradations else ""))
    if cell.truncated:
        out.append("truncated")
    if cell.multi_block:
        out.append(f"{cell.n_json_blocks} JSON blocks")
    if cell.audit_flagged:
        out.append(f"audit: {cell.audit_verdict}")
    if cell.redrawn:
        out.append(f"re-drawn (attempt {cell.run_attempt}, {cell.n_redraws} earlier that ran)")
    if cell.over_turns:
        out.append(f"{cell.turns_used} turns > cap {cell.max_turns}")
    if cell.no_isolation:
        out.append("not isolated")
    if cell.isolation_unrecorded:
        out.append("isolation not recorded")
    if cell.allow_paths:
        out.append(f"{cell.n_allow_paths} allowed path(s)")
    if cell.served_other_model:
        out.append(f"served by {cell.served_model}")
    if cell.served_unnamed:
        out.append("served model not named")
    if cell.non_reference:
        out.append("non-reference condition")
    if cell.preflight_warned:
        out.append(f"{cell.preflight_warnings} preflight warning(s)")
    if cell.zero_rows and cell.status == SC.STATUS_SCORED:
        out.append("0 rows")
    if cell.record and cell.record.get("format_error"):
        out.append("format error")
    if cell.answer_check not in (None, "ok", "n/a"):
        out.append(f"answer check: {cell.answer_check}")
    if getattr(cell, "reward_mismatch", ""):
        out.append("reward mismatch")
    return out


def _slug(s: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in s)


def case_page(game: str, case_id: str) -> str:
    return f"cases/{_slug(game)}/{_slug(case_id)}.html"


# --------------------------------------------------------------------------------------------------
# work done in worker processes (matplotlib, Pillow)
# --------------------------------------------------------------------------------------------------
def _draw_timeline(job: tuple[str, bytes | None, dict[str, Any], str, float, str]) -> str:
    # deferred: matplotlib (about 3.2 s of CPU), in the drawing workers
    from video_arena.scoring.timeline import draw_timeline

    gt_path, answer, record, out, neutral, title = job
    try:
        gt = load_judge().load_gt(gt_path)
        draw_timeline(gt, answer, record, Path(out), neutral=neutral, title=title, dpi=72)
    except Exception as exc:  # noqa: BLE001 - one picture that cannot be drawn never stops the site
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return ""


def _neutral(tasks_root: Path, game: str) -> float:
    toml = tasks_root / game / "game.toml"
    try:
        return parse_game_toml(toml.read_text(encoding="utf-8"), source=str(toml)).value_neutral
    except Exception:  # noqa: BLE001 - every shipped V_t is a probability
        return 0.5


# --------------------------------------------------------------------------------------------------
# the site
# --------------------------------------------------------------------------------------------------
class SiteError(ValueError):
    """The site cannot be written (bad output folder, unreadable input)."""


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["f"] = _fmt
    env.filters["ci"] = _ci
    env.filters["mmss"] = _mmss
    env.filters["json"] = lambda o: json.dumps(o, indent=1, ensure_ascii=False, sort_keys=False)
    return env


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise SiteError(f"-o {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / SITE_MARKER).is_file():
        raise SiteError(f"-o {out} is a non-empty folder that is not an explorer site; "
                        f"name a new or empty folder (an earlier site there is replaced)")


def build_site(sources: list[str | Path], out: str | Path, *, tasks_root: str | Path | None = None,
               jobs: int | None = None, cache_dir: str | Path | None = None, extract_stills: bool = False,
               allow_mixed: bool = False, exclude_flagged: bool = False,
               progress: bool | None = None) -> dict[str, Any]:
    """Score each source and write the site to `out` (atomically: a temporary sibling renamed into
    place).  Returns a summary: pages written, cells, seconds."""
    # deferred: matplotlib (about 3.2 s of CPU): not for --help
    from video_arena.scoring.plots import plot_game_means

    t0 = time.monotonic()
    out = Path(out).expanduser().resolve()
    _check_out(out)
    systems = [HJ.score_any(src, tasks_root, progress=False, exclude_flagged=exclude_flagged) for src in sources]
    if len(systems) == 2 and systems[0].label == systems[1].label:
        systems[0].label, systems[1].label = "A:" + systems[0].label, "B:" + systems[1].label
    for s in systems:  # the same refusal as `video-arena score`
        if s.mixed and not allow_mixed:
            raise SS.MixedError(f"REFUSED: {s.label} holds cells of more than one measurement "
                               f"(--allow-mixed shows it as a DIAGNOSTIC)", s.mixed)
    root = systems[0].tasks_root
    comparison = SS.compare(systems[0], systems[1], allow_mixed=allow_mixed) if len(systems) == 2 else None
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        for sub in ("img", "games", "cases", "stills"):
            (tmp / sub).mkdir()
        shutil.copyfile(TEMPLATES / "style.css", tmp / "style.css")
        scrub = C.Scrubber({**{f"results{i or ''}": s.results.resolve() for i, s in enumerate(systems)},
                            "tasks": root, "media": paths.media_root(root), "home": Path.home(),
                            "tmp": tempfile.gettempdir(), "cwd": Path.cwd(), "checkout": paths.REPO_ROOT})
        stills_src = ST.StillSource(cache_dir, root, extract=extract_stills)
        views, timeline_jobs, thumb_jobs = _collect(systems, root, tmp, scrub, stills_src)
        n_jobs = max(1, jobs or os.cpu_count() or 1)
        failed = _run_parallel(timeline_jobs, thumb_jobs, n_jobs, progress)
        for v in (v for vs in views.values() for v in vs):
            if v.timeline and not (tmp / v.timeline).is_file():
                v.timeline_note = scrub.text(failed.get(str(tmp / v.timeline)) or "no picture was written")
                v.timeline = None
            lost = [st for st in v.stills if st["thumb"] and not (tmp / st["thumb"]).is_file()]
            for st in lost:  # not a JPEG, too many pixels, or not decodable: said, never drawn
                st["thumb"] = None
            if lost:
                v.stills_note = (v.stills_note + "; " if v.stills_note else "") + \
                    f"{len(lost)} still(s) not drawn (not a JPEG of at most {ST.MAX_STILL_PIXELS} pixels)"
        plot_game_means(systems, tmp / "img" / "chart.png", comparison)
        n_pages = _write_pages(_env(), tmp, systems, views, comparison, scrub)
        (tmp / SITE_MARKER).write_text("video-arena explore site\n", encoding="utf-8")
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.rename(out, old / "site")
            os.rename(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"out": str(out), "pages": n_pages, "cells": sum(len(v) for v in views.values()),
            "systems": [s.label for s in systems], "seconds": round(time.monotonic() - t0, 2)}


def _collect(systems, root: Path, tmp: Path, scrub: C.Scrubber, stills_src: "ST.StillSource"):
    # deferred: the timeline module imports matplotlib (about 3.2 s of CPU)
    from video_arena.scoring.timeline import answer_rows

    J = load_judge()
    views: dict[tuple[str, str], list[CellView]] = {}
    timeline_jobs: list[tuple] = []
    thumb_jobs: dict[str, Path] = {}
    neutral: dict[str, float] = {}
    for si, s in enumerate(systems):
        for cell in s.cells():
            if cell.status == SC.STATUS_MISSING and not R.cell_dir(s.results, cell.game, cell.case_id).is_dir() \
                    and not getattr(cell, "trial", ""):
                continue  # never ran: listed on the game page, no case column
            files = C.cell_files(s, cell)
            run = C.read_json(files.run)
            v = CellView(system=s.label, system_index=si, cell=cell, files=files, status=cell.status,
                         scores={m: cell.metric(m) for m in SC.METRICS}, caveats=cell_caveats(cell),
                         run=scrub.record(run) if run else None,
                         harbor_result=scrub.record(C.read_json(files.harbor_result)) if files.harbor_result else None)
            v.label = s.label + (f" · {cell.trial}" if getattr(cell, "trial", "") else "")
            gt_path = TasksTree(root).gt(cell.game, cell.case_id)
            if cell.record is not None and gt_path.is_file():
                no_answer = cell.context_overflow or (cell.zero_rows and cell.answer_state in SC.NO_ANSWER_STATES)
                answer = None if no_answer else \
                    C.read_bounded(files.answer, CV.MAX_ANSWER_BYTES)
                try:
                    gt = J.load_gt(gt_path)
                    pred = answer_rows(answer, cell.record)
                except Exception:  # noqa: BLE001 - an unreadable pair is shown without the table
                    gt, pred = None, []
                if gt is not None:
                    v.rows = C.events_table(gt, pred, cell.record)
                    v.counts = C.mark_counts(v.rows)
                name = f"img/tl-{_slug(cell.game)}-{_slug(cell.case_id)}-{si}-{_slug(getattr(cell, 'trial', '') or 'c')}.png"
                if cell.game not in neutral:
                    neutral[cell.game] = _neutral(root, cell.game)
                timeline_jobs.append((str(gt_path), answer, cell.record, str(tmp / name), neutral[cell.game],
                                      f"{cell.game} / {cell.case_id} · {s.label}"))
                v.timeline = name
            v.reply, v.reply_cut = C.text_head(files.reply)
            if v.reply is not None:
                v.reply = scrub.text(v.reply)
            for p in files.logs:
                tail, cut = C.text_tail(p, 16 * 1024)
                if tail is not None:
                    v.logs.append({"name": p.name, "text": scrub.text(tail), "cut": cut})
            hist = R.RunRecord.from_doc(run).protocol_b.answer_history if run else R.UNSET  # typed, as read
            if isinstance(hist, list):
                v.history = [h for h in hist if isinstance(h, dict)][:500]
            receipt = C.read_json(files.receipt)
            if receipt is not None:
                v.stills, v.stills_note = stills_src.stills_for(receipt, files.frames_dir, cell.game,
                                                                cell.case_id, thumb_jobs)
            views.setdefault((cell.game, cell.case_id), []).append(v)
    return views, timeline_jobs, {str(tmp / "stills" / name): src for name, src in thumb_jobs.items()}


def _run_parallel(timeline_jobs: list[tuple], thumb_jobs: dict[str, Path], n_jobs: int,
                  progress: bool | None) -> dict[str, str]:
    """Draw the timelines and thumbnails; returns {timeline path: why it was not drawn}."""
    # deferred: tqdm (about 0.1 s of CPU), only while drawing
    from tqdm import tqdm

    failed: dict[str, str] = {}
    total = len(timeline_jobs) + len(thumb_jobs)
    if not total:
        return failed
    bar = tqdm(total=total, desc="explore", unit="img", disable=None if progress is None else not progress)
    thumbs = list(thumb_jobs.items())
    batches = [thumbs[i:i + 64] for i in range(0, len(thumbs), 64)]
    try:
        if n_jobs == 1:
            for j in timeline_jobs:
                failed[j[3]] = _draw_timeline(j)
                bar.update(1)
            for b in batches:
                ST.make_thumbs(b)
                bar.update(len(b))
            return {k: v for k, v in failed.items() if v}
        with cf.ProcessPoolExecutor(max_workers=n_jobs, mp_context=mp.get_context("forkserver")) as pool:
            futs = {pool.submit(_draw_timeline, j): j[3] for j in timeline_jobs}
            futs.update({pool.submit(ST.make_thumbs, b): len(b) for b in batches})
            for fut in cf.as_completed(futs):
                done = fut.result()
                if isinstance(futs[fut], str):
                    failed[futs[fut]] = done
                    bar.update(1)
                else:
                    bar.update(futs[fut])
    finally:
        bar.close()
    return {k: v for k, v in failed.items() if v}


def _write_pages(env: jinja2.Environment, tmp: Path, systems, views, comparison, scrub: C.Scrubber) -> int:
    n = 0
    conditions = [s.conditions() for s in systems]  # the dimensions `score` refuses to mix
    score_rows = SO.csv_rows(systems)
    games = sorted({g for s in systems for g in s.games})
    common = {"systems": systems, "games": games, "metrics": SC.METRICS, "headline": SC.REWARD, "tiers": SC.TIERS,
              "zero_filled": tuple(SC.ZERO_FILLED), "metric_labels": {m: SC.label_of(m) for m in SC.METRICS}}
    page = env.get_template("index.html.j2").render(
        **common, root="", rows=score_rows, comparison=comparison, conditions=conditions,
        warnings=[scrub.text(w) for s in systems for w in s.warnings][:200],
        no_case_games=sorted({g for s in systems for g in s.no_case_games}))
    (tmp / "index.html").write_text(page, encoding="utf-8")
    n += 1
    for g in games:
        case_ids = []
        for s in systems:
            gs = s.games.get(g)
            for c in (gs.cells if gs else []):
                if c.case_id not in case_ids:
                    case_ids.append(c.case_id)
        table = []
        for cid in case_ids:
            entry = {"case_id": cid, "page": case_page(g, cid) if (g, cid) in views else None, "per_system": []}
            for si, s in enumerate(systems):
                vs = [v for v in views.get((g, cid), []) if v.system_index == si]
                gs = s.games.get(g)
                cs = [c for c in (gs.cells if gs else []) if c.case_id == cid]
                entry["per_system"].append({"views": vs, "cells": cs})
            table.append(entry)
        page = env.get_template("game.html.j2").render(**common, root="../", game=g, table=table,
                                                       gscores=[s.games.get(g) for s in systems])
        (tmp / "games" / f"{_slug(g)}.html").write_text(page, encoding="utf-8")
        n += 1
    for (g, cid), vs in views.items():
        dest = tmp / case_page(g, cid)
        dest.parent.mkdir(parents=True, exist_ok=True)
        page = env.get_template("case.html.j2").render(**common, root="../../", game=g, case_id=cid, views=vs)
        dest.write_text(page, encoding="utf-8")
        n += 1
    return n


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="video-arena explore", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="a native results folder or a Harbor job folder")
    ap.add_argument("--compare", default=None, help="a second results folder or job: pages side by side")
    ap.add_argument("-o", "--out", required=True, help="folder to write the site to (new, empty, or an earlier site)")
    ap.add_argument("--tasks-root", default=None, help=f"tasks tree (default ${paths.TASKS_ROOT_ENV} or tasks/)")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes for the pictures (default: every core)")
    ap.add_argument("--cache-dir", default=None,
                    help="Protocol A stills cache (default: run-a's, $VA_A_CACHE or <checkout>/.cache/protocol_a)")
    ap.add_argument("--extract-stills", action="store_true",
                    help="re-extract Protocol A stills that are not cached (from the tasks tree's media)")
    ap.add_argument("--allow-mixed", action="store_true",
                    help="show a run whose cells are not one measurement, marked DIAGNOSTIC (as `score --allow-mixed`)")
    ap.add_argument("--exclude-flagged", action="store_true", help="drop audit-flagged cells (as `score --exclude-flagged`)")
    a = ap.parse_args(argv)
    if a.jobs is not None and a.jobs < 1:
        print("video-arena explore: --jobs must be >= 1", file=sys.stderr)
        return 2
    sources = [a.results] + ([a.compare] if a.compare else [])
    try:
        summary = build_site(sources, a.out, tasks_root=a.tasks_root, jobs=a.jobs, cache_dir=a.cache_dir,
                             extract_stills=a.extract_stills, allow_mixed=a.allow_mixed,
                             exclude_flagged=a.exclude_flagged)
    except SS.MixedError as exc:
        print(f"video-arena explore: {exc.what}; they differ in:", file=sys.stderr)
        for d in exc.differences:
            print(f"  {d}", file=sys.stderr)
        return 2
    except (SiteError, SC.ScoringInputError, FileNotFoundError) as exc:
        print(f"video-arena explore: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"video-arena explore: cannot write the site: {exc.strerror or exc} ({exc.filename or a.out})",
              file=sys.stderr)
        return 2
    print(f"explore: {summary['pages']} pages, {summary['cells']} cells in {summary['seconds']} s: "
          f"open {html.escape(summary['out'])}/index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
