"""`video-arena run-a` (also `run_protocol_a.py`): Protocol A over a tasks tree.

    video-arena run-a --model ID --base-url URL --out DIR [--games g,..] [--limit N] [--workers N]
                      [--max-tokens N] [--extra-body JSON] [--jpeg-q Q] [--condition FILE]
                      [--reasoning-effort E] [--enable-thinking true|false] [--force] [--tasks-root DIR]

The API key comes from $OPENAI_API_KEY (the base URL from --base-url or $OPENAI_BASE_URL).  One
folder per cell, <out>/<game>/<case_id>/ (see video_arena.protocol_a.request_cell).  Resumable: a cell
that ran (video_arena/core/results.py `cell_status`) is skipped unless --force; a cell that ended in
harness_error is run again.  Stills are cached per (media SHA-256, grid) under --cache-dir, so a sweep over many models
samples each video once.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import openai

from video_arena.core import results as R
from video_arena.progress import bar as progress_bar
from video_arena.core import iter_cases, resolve
from video_arena.core.tasks import GAME_VERSION_KEY
from video_arena.media import grid as G
from video_arena.protocol_a.request_cell import execute_cell
from video_arena.core.condition import CONDITIONS_SUBDIR, ConditionError, is_versioned, load_condition
from video_arena.core.request import RequestOptions, check_extra_body
from video_arena.cli_args import comma_list
from video_arena.toolkit_info import toolkit_provenance
from video_arena.core.condition_fields import finished_cell_conflict



def _bool(s: str) -> bool:
    v = s.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {s!r}")


def _json_obj(s: str) -> dict[str, Any]:
    try:
        v = json.loads(s)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"--extra-body is not JSON: {exc}") from exc
    if not isinstance(v, dict):
        raise argparse.ArgumentTypeError("--extra-body must be a JSON object")
    return v


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="video-arena run-a", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="model id as the endpoint expects it")
    ap.add_argument("--base-url", default=None, help="OpenAI-compatible base URL (default $OPENAI_BASE_URL)")
    ap.add_argument("--out", required=True, help="results folder: <out>/<game>/<case_id>/")
    ap.add_argument("--games", default=None, help="comma-separated games (default: all in the tasks tree)")
    ap.add_argument("--limit", type=int, default=None, help="first N cases of each game")
    ap.add_argument("--workers", type=int, default=1, help="cells run concurrently (the paper uses 5)")
    ap.add_argument("--max-tokens", type=int, default=None, help="output guard (default: the condition's, 48000)")
    ap.add_argument("--extra-body", type=_json_obj, default={}, help="JSON object merged into the request")
    ap.add_argument("--jpeg-q", type=int, default=None,
                    help="JPEG -q:v for every cell (a recorded degradation; default: the condition's, 4)")
    ap.add_argument("--max-frames", type=int, default=None,
                    help="a provider image cap below the grid's (a recorded degradation)")
    ap.add_argument("--condition", default=None, help="condition file (default: the versioned v1)")
    ap.add_argument("--reasoning-effort", default=None, help="sent as reasoning_effort and recorded")
    ap.add_argument("--enable-thinking", type=_bool, default=None,
                    help="true|false, sent as chat_template_kwargs.enable_thinking (Qwen on vLLM)")
    ap.add_argument("--on-overflow", choices=("stop", "degrade"), default="stop",
                    help="a context-length refusal: stop the cell (stop reason context_overflow, the default) "
                         "or re-send it with fewer stills (a recorded max_frames degradation)")
    ap.add_argument("--force", action="store_true", help="re-run cells that already have a reply")
    ap.add_argument("--tasks-root", default=None, help="tasks tree (default $VA_TASKS_ROOT or the built-in tasks/)")
    ap.add_argument("--media-root", default=None, help="where <game>/media/<case>.mp4 are (default: tasks root)")
    ap.add_argument("--cache-dir", default=None,
                    help=f"stills cache (default ${G.CACHE_ENV} or <checkout>/.cache/protocol_a)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar (also: VA_NO_PROGRESS=1)")
    return ap


def cell_done(cell: Path) -> R.RunRecord | None:
    """The run record of a finished cell (one that ran: results.cell_status), else None.  A cell that
    stopped on context_overflow ran: re-sending it would be the refused request again."""
    st = R.cell_status(cell)
    return st.record if st.finished else None


def make_client(base_url: str, timeout: float) -> openai.OpenAI:
    key = os.environ.get("OPENAI_API_KEY")
    if not key:
        print("warning: OPENAI_API_KEY is not set; sending the placeholder key 'EMPTY'", file=sys.stderr)
        key = "EMPTY"
    return openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=timeout)


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    base_url = a.base_url or os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        print("error: give --base-url or set OPENAI_BASE_URL", file=sys.stderr)
        return 2
    try:
        cond = load_condition(a.condition)
        cond.grid(jpeg_q=a.jpeg_q, max_frames=a.max_frames)
    except (ConditionError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if a.workers < 1:
        print("error: --workers must be >= 1", file=sys.stderr)
        return 2
    try:
        check_extra_body(a.extra_body)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    games = comma_list(a.games) if a.games else None
    try:
        cells = list(iter_cases(a.tasks_root, games, a.limit))
    except (LookupError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cdir = out / CONDITIONS_SUBDIR
    cdir.mkdir(exist_ok=True)
    shutil.copyfile(cond.source, cdir / f"{cond.sha256}.json")
    cache = G.FrameCache(G.cache_root(a.cache_dir))
    opts = RequestOptions(model=a.model, max_tokens=a.max_tokens or cond.max_tokens, temperature=cond.temperature,
                          reasoning_effort=a.reasoning_effort, enable_thinking=a.enable_thinking,
                          extra_body=a.extra_body)
    client = make_client(base_url, cond.request_timeout_s)

    if not a.force:  # a finished cell of another condition in --out: resuming would mix two measurements
        this_run = {"protocol": "A", "model": a.model, **R.ProtocolARecord(
            condition_sha256=cond.sha256, reasoning_effort=a.reasoning_effort, request_params=opts.record(),
            on_overflow=a.on_overflow, toolkit=toolkit_provenance()).to_doc()}
        conflict = finished_cell_conflict(out, [(g, c["case_id"]) for g, c in cells], this_run,
                                          ("model", "condition_sha256", R.REASONING_EFFORT))
        if conflict:
            print(f"error: {conflict}", file=sys.stderr)
            return 2
    todo, skipped = [], 0
    for game, case in cells:
        if cell_done(R.cell_dir(out, game, case["case_id"])) and not a.force:
            skipped += 1
            continue
        todo.append((game, case["case_id"]))

    lock = threading.Lock()

    def run_one(game: str, case_id: str) -> R.RunRecord:
        r = resolve(game, case_id, a.tasks_root, a.media_root)
        media_sha: list[str] = []

        def frames_for(spec: G.GridSpec) -> G.FrameSet:
            if not Path(r["media"]).is_file():
                raise G.GridError(f"media {r['media']} is missing")
            if not media_sha:
                media_sha.append(G.sha256_file(r["media"]))
            return cache.get(r["media"], spec, media_sha[0])

        return execute_cell(cond=cond, opts=opts, client=client, game=game, case_id=case_id,
                            instruction_path=r["instruction"], frames_for=frames_for,
                            out_dir=R.cell_dir(out, game, case_id), runner="native", jpeg_q=a.jpeg_q,
                            max_frames=a.max_frames, on_overflow=a.on_overflow, game_version=r[GAME_VERSION_KEY])

    counts: dict[str, int] = {}
    print(f"{len(todo)} cells to run, {skipped} already done, condition {cond.name} "
          f"({cond.sha256[:12]}{'' if is_versioned(cond.sha256) else ', NON-REFERENCE: not a versioned condition file'}"
          f"), out {out}", file=sys.stderr)
    with progress_bar(len(todo), f"run-a {a.model}", "cell", enabled=not a.no_progress) as bar, \
            ThreadPoolExecutor(max_workers=a.workers) as pool:
        futs = {pool.submit(run_one, g, c): (g, c) for g, c in todo}
        for fut in as_completed(futs):
            g, c = futs[fut]
            try:
                rec = fut.result()
                failed = rec.stop_reason in ("harness_error", "context_overflow")
                key = rec.stop_reason if failed else rec.answer_state
                extras = rec.protocol_a
                if failed:
                    bar.write(f"{g}/{c}: {rec.stop_reason}: {R.or_none(extras.error)}", file=sys.stderr)
                elif extras.degradations:
                    bar.write(f"{g}/{c}: degraded: " + "; ".join(
                        f"{d.get('kind')} {d.get('from')} -> {d.get('to')}" for d in extras.degradations),
                        file=sys.stderr)
            except Exception as exc:  # noqa: BLE001 - a bug in one cell must not stop the sweep
                key = "crashed"
                bar.write(f"{g}/{c}: crashed: {type(exc).__name__}: {exc}", file=sys.stderr)
            with lock:
                counts[key] = counts.get(key, 0) + 1
            bar.set_postfix(counts, refresh=False)
            bar.update(1)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "nothing to run"
    print(f"done: {summary}; skipped {skipped}", file=sys.stderr)
    return 1 if counts.get("crashed") else 0


if __name__ == "__main__":
    sys.exit(main())
