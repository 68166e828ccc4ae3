"""`video-arena run-b` (and `run_protocol_b.py`): Protocol B natively, with any agent CLI.

    video-arena run-b --agent-cmd 'my-agent --cwd {sandbox} --prompt-file {prompt} --max-turns {max_turns}' \\
        --out results/b-mymodel --model my-model [--games chess,go] [--limit N] [--tasks-root DIR] \\
        [--max-turns 200] [--timeout-min 120] [--sandbox-root DIR] [--skip-preflight] [--workers 3] [--force]
        [--allow-path PATH[:ro|rw]]... [--no-isolation] [--reasoning-effort E] [--log-cap-mb 64]

Per cell (one case of one game): a fresh sandbox (sandbox.py); the agent command run by bash with
the sandbox as its working directory, inside the cell's own PID and mount namespaces (isolation.py:
it sees the system directories, its sandbox and the --allow-path paths, nothing else of the host),
after a start marker the runner reads (no marker = harness_error, never ran); stdout/stderr read
through pipes into capped logs; at --timeout-min every process of the namespace is killed (procs.py);
then answer.json is collected, bounded and never through a symlink, its state decided by digest
(states.py), the transcript audited (audit.py), and
`<out>/<game>/<case_id>/{answer.json, run.json, prompt.txt, logs/}` written.  See
docs/PROTOCOLS.md, "Protocol B: agentic", for every run.json key.

Template placeholders: `{sandbox}` (the working directory), `{prompt}` (the path of prompt.txt),
`{max_turns}`, `{reasoning_effort}`; each is replaced by a shell-quoted value, so do not quote them
yourself.  Any other `{name}` is a template error (a `${name}` shell expansion is left alone).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import re
import shutil
import signal
import sys
import threading
from pathlib import Path

from video_arena import paths
from video_arena.cli_args import comma_list
from video_arena.core import results as R
from video_arena.core.condition_fields import finished_cell_conflict
from video_arena.toolkit_info import toolkit_provenance
from video_arena.core.tasks import iter_cases
from video_arena.progress import bar as progress_bar
from video_arena.protocol_b import procs
from video_arena.core.results import redact
from video_arena.protocol_b.agent_cell import (DEFAULT_LOG_CAP_MB, PLACEHOLDERS, RunConfig, TemplateError, fill_template,
                                         run_cell)
from video_arena.protocol_b.isolation import MODE_BWRAP, IsolationError, agent_command_problem, make_isolation
from video_arena.protocol_b.preflight import run_preflight
from video_arena.protocol_b.sandbox import (CELL_MARKER_ENV, SandboxError, agent_environment, ancestor_warnings,
                                            check_sandbox_root, forbidden_roots)
from video_arena.protocol_b.spawn import first_word

_EFFORT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="video-arena run-b", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent-cmd", required=True,
                    help="shell command template; {sandbox}, {prompt}, {max_turns}, {reasoning_effort} are "
                         "filled per cell")
    ap.add_argument("--out", required=True, help="results folder: <out>/<game>/<case_id>/")
    ap.add_argument("--model", default="unknown", help="model id recorded in run.json")
    ap.add_argument("--games", default=None, help="comma-separated games (default: every game with cases)")
    ap.add_argument("--limit", type=int, default=None, help="the first N cases of each game")
    ap.add_argument("--tasks-root", default=None, help=f"tasks tree (default ${paths.TASKS_ROOT_ENV} or tasks/)")
    ap.add_argument("--media-root", default=None, help=f"media root (default ${paths.MEDIA_ROOT_ENV} or the tasks root)")
    ap.add_argument("--max-turns", type=int, default=200,
                    help="turn cap stated in the prompt and passed as {max_turns}; 0 = the harness cannot count turns")
    ap.add_argument("--timeout-min", type=float, default=120.0, help="wall clock per cell, enforced by the runner")
    ap.add_argument("--sandbox-root", default=None, help="where sandboxes are created (default: the system temp dir)")
    ap.add_argument("--skip-preflight", action="store_true",
                    help="do not check ffmpeg/ffprobe/python3/modules (the agent runs in its own container)")
    ap.add_argument("--workers", type=int, default=1, help="cells run concurrently (the paper: 3)")
    ap.add_argument("--force", action="store_true", help="re-run cells that already have a run.json")
    ap.add_argument("--kill-grace-s", type=float, default=5.0,
                    help="seconds between SIGTERM and SIGKILL at the limit (default 5)")
    ap.add_argument("--keep-sandboxes", action="store_true",
                    help="keep each sandbox after collection (default: removed; logs and answer are in --out)")
    ap.add_argument("--hardlink-media", action="store_true",
                    help="hard-link match.mp4 instead of copying (an agent writing to it would change the case's media)")
    ap.add_argument("--reasoning-effort", default=None, metavar="E",
                    help="the agent's reasoning effort (e.g. low/medium/high): recorded in run.json and passed "
                         "as {reasoning_effort}; declare it whenever the agent is told one")
    ap.add_argument("--allow-path", action="append", default=[], metavar="PATH[:ro|rw]",
                    help="a path the isolated agent may see (its installation, its state; default ro); "
                         "repeatable. Everything else of the host outside the system directories is hidden")
    ap.add_argument("--no-isolation", action="store_true",
                    help="run the agent with the runner's view of the host (no namespaces): its reach to "
                         "ground truth is then audited, not prevented; recorded in run.json")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar (also: VA_NO_PROGRESS=1)")
    ap.add_argument("--log-cap-mb", type=float, default=DEFAULT_LOG_CAP_MB,
                    help=f"bytes of each of the agent's stdout/stderr kept in the logs (default {DEFAULT_LOG_CAP_MB} "
                         "MiB; the rest is counted and dropped, recorded in run.json)")
    return ap


def _err(msg: str) -> None:
    print(f"video-arena run-b: {msg}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.max_turns < 0 or a.timeout_min <= 0 or a.workers < 1 or (a.limit is not None and a.limit < 1) \
            or a.kill_grace_s < 0 or not a.log_cap_mb > 0:
        _err("--max-turns must be >= 0, --timeout-min > 0, --workers >= 1, --limit >= 1, --kill-grace-s >= 0, "
             "--log-cap-mb > 0")
        return 2
    if a.reasoning_effort is not None and not _EFFORT_RE.fullmatch(a.reasoning_effort):
        _err(f"--reasoning-effort {a.reasoning_effort!r}: expected a word such as low, medium or high")
        return 2
    uses_effort = "{reasoning_effort}" in a.agent_cmd
    if uses_effort and a.reasoning_effort is None:
        _err("--agent-cmd uses {reasoning_effort} but --reasoning-effort was not given")
        return 2
    if a.reasoning_effort is not None and not uses_effort:
        _err("warning: --reasoning-effort is recorded, but --agent-cmd has no {reasoning_effort}: make sure "
             "the agent is really run at that effort")
    bash = shutil.which("bash")
    if not bash:
        _err("bash is needed to start the agent command (its start marker); install bash")
        return 2
    try:
        tasks_root = paths.tasks_root(a.tasks_root)
        media_root = paths.media_root(tasks_root, a.media_root)
        forbidden = forbidden_roots(tasks_root, media_root)
        sandbox_base = check_sandbox_root(a.sandbox_root, forbidden)
        games = comma_list(a.games) if a.games else None
        cells = [(g, c["case_id"]) for g, c in iter_cases(tasks_root, games, a.limit)]
    except (SandboxError, FileNotFoundError, LookupError, ValueError) as exc:
        _err(str(exc))
        return 2
    out = Path(a.out).expanduser().resolve()
    for f in forbidden[1:]:
        if out == f or f in out.parents:
            _err(f"--out {out} is inside the tasks tree or media root {f}; write results elsewhere")
            return 2
    try:
        isolation = make_isolation(a.no_isolation, a.allow_path, [*forbidden, out], sandbox_base)
    except IsolationError as exc:
        _err(str(exc))
        return 2
    if isolation.mode != MODE_BWRAP:  # isolated, nothing outside the sandbox is a path away
        for w in ancestor_warnings(sandbox_base, forbidden):
            _err(f"warning: {w}")
    cfg = RunConfig(agent_cmd=a.agent_cmd, out=out, tasks_root=tasks_root, media_root=media_root,
                    sandbox_base=sandbox_base, forbidden=forbidden, max_turns=a.max_turns,
                    timeout_min=a.timeout_min, model=a.model, kill_grace_s=a.kill_grace_s,
                    keep_sandboxes=a.keep_sandboxes, hardlink_media=a.hardlink_media, bash=bash,
                    isolation=isolation, log_cap_bytes=int(a.log_cap_mb * (1 << 20)),
                    reasoning_effort=a.reasoning_effort)
    try:
        fill_template(a.agent_cmd, {p: "x" for p in PLACEHOLDERS})
    except TemplateError as exc:
        _err(f"{exc}; no cell was run")
        return 2
    if "{prompt}" not in a.agent_cmd:
        _err("warning: --agent-cmd has no {prompt}: the agent will not be given the turn-1 prompt")
    if a.max_turns and "{max_turns}" not in a.agent_cmd:
        _err(f"warning: --agent-cmd has no {{max_turns}}: the prompt states a cap of {a.max_turns} turns but "
             "nothing passes it to the agent, so nothing enforces it (give it to the agent's own flag, or "
             "--max-turns 0 when the harness cannot count turns); cells over the cap are flagged by score")
    if not cells:
        _err(f"no cases to run in {tasks_root} (games: {games or 'all'}); nothing done")
        return 0
    if not a.force:  # a finished cell of another condition in --out: resuming would mix two measurements
        this_run = {"protocol": "B", "model": cfg.model, "max_turns": cfg.max_turns, "timeout_min": cfg.timeout_min,
                    "agent_cmd": redact(cfg.agent_cmd), "isolation": isolation.record(),
                    R.REASONING_EFFORT: cfg.reasoning_effort, "toolkit": toolkit_provenance()}
        conflict = finished_cell_conflict(out, cells, this_run, ("model", R.REASONING_EFFORT))
        if conflict:
            _err(f"error: {conflict}")
            return 2
    if isolation.mode == MODE_BWRAP:  # the program and every host path the command names, as the agent sees them
        fake = sandbox_base / "va-b-check" / "sandbox"
        try:
            probe_cmd = fill_template(a.agent_cmd, {"sandbox": str(fake), "prompt": str(fake / R.PROMPT_FILE),
                                                    "max_turns": str(a.max_turns),
                                                    R.REASONING_EFFORT: a.reasoning_effort or ""})
        except TemplateError:
            probe_cmd = None
        if probe_cmd is not None:
            env, _ = agent_environment(cfg.base_env, forbidden, sandbox_base, "check")
            problem = agent_command_problem(isolation, probe_cmd, first_word(probe_cmd), env, sandbox_base,
                                            [*forbidden, out], fake)
            if problem:
                _err(f"{problem}; no cell was run")
                return 2
    if a.skip_preflight:
        cfg.preflight = {"skipped": True}
    else:
        env, _ = agent_environment(cfg.base_env, forbidden, sandbox_base, "preflight")
        wrap = None
        if isolation.mode == MODE_BWRAP:
            wrap = [isolation.bwrap, *isolation.mount_args(), "--chdir", "/tmp", "--"]
        pf = run_preflight(env, wrap=wrap)
        for w in pf.warnings:
            _err(f"preflight warning: {w}")
        if not pf.ok:
            for e in pf.errors:
                _err(f"preflight error: {e}")
            _err("no cell was run (--skip-preflight if the agent brings its own toolset)")
            return 2
        cfg.preflight = {"skipped": False, **pf.summary()}

    todo = [(g, c) for g, c in cells if a.force or not R.cell_status(R.cell_dir(out, g, c)).finished]
    skipped = len(cells) - len(todo)
    if skipped:
        print(f"run-b: {skipped} finished cell(s) skipped (--force to re-run them)", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    # SIGTERM (a job scheduler, `kill`) takes the same path as Ctrl-C: the running cells' agents are
    # killed before the runner exits, never orphaned.
    prev_term = None
    if threading.current_thread() is threading.main_thread():
        def _on_term(signum, frame):
            raise KeyboardInterrupt(f"signal {signum}")
        prev_term = signal.signal(signal.SIGTERM, _on_term)
    was_subreaper = procs.is_child_subreaper()
    procs.set_child_subreaper(True)
    run_start_ticks = procs.boot_ticks_now() - 1
    counts: dict[str, int] = {}
    interrupted = False
    not_started: str | None = None
    bar = progress_bar(len(todo), "run-b", "cell", enabled=not a.no_progress)
    pool = cf.ThreadPoolExecutor(max_workers=a.workers)
    futures: dict[cf.Future, tuple[str, str]] = {}

    def run_batch(batch: list[tuple[str, str]]) -> list[R.RunRecord | None]:
        mine = {pool.submit(run_cell, cfg, g, c): (g, c) for g, c in batch}
        futures.update(mine)
        pending = set(mine)
        records = []
        while pending:
            done, pending = cf.wait(pending, timeout=0.5, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                g, c = futures[fut]
                try:
                    rec = fut.result()
                except Exception as exc:  # noqa: BLE001 - a runner bug must not stop the other cells
                    status = R.cell_status(R.cell_dir(out, g, c))
                    what = ("its run.json was written before: the cell is recorded" if status.finished
                            else "no run.json: the cell is missing")
                    bar.write(f"video-arena run-b: {g}/{c}: runner error {exc!r} ({what})", file=sys.stderr)
                    counts["runner_error"] = counts.get("runner_error", 0) + 1
                    bar.update(1)
                    continue
                records.append(rec)
                if rec is not None and rec.protocol_b.sandbox_removed is False:
                    left = Path(str(rec.protocol_b.sandbox)).parent
                    bar.write(f"video-arena run-b: warning: {g}/{c}: its sandbox folder {left} was not fully "
                              f"removed ({rec.protocol_b.sandbox_note}); the cell is recorded", file=sys.stderr)
                    counts["sandbox_left"] = counts.get("sandbox_left", 0) + 1
                label = "interrupted" if rec is None else (
                    rec.stop_reason if rec.stop_reason == "harness_error"
                    else f"{rec.answer_state}")
                counts[label] = counts.get(label, 0) + 1
                bar.set_postfix(counts, refresh=False)
                bar.update(1)
        return records

    try:
        # One cell first: whether the agent command starts at all (inside the isolation, however it is
        # wrapped) is known only by running it; a command that cannot start stops the run there, its
        # cell missing, instead of spending every cell on a table of zeros.
        for rec in run_batch(todo[:1]):
            if rec is not None and rec.protocol_b.agent_started is False:
                not_started = f"{rec.game}/{rec.case_id}: {R.or_none(rec.protocol_b.error)}"
        if todo and not_started is None:
            cfg.start_proven.set()
            run_batch(todo[1:])
    except KeyboardInterrupt:
        interrupted = True
        cfg.stop.set()
        _err("interrupted: stopping the running cells (their agents are killed; they stay missing)")
        for fut in futures:
            fut.cancel()
    finally:
        pool.shutdown(wait=True)
        bar.close()
        strays = procs.final_sweep(cfg.run_token, CELL_MARKER_ENV, run_start_ticks)
        if strays:
            _err(f"warning: killed {len(strays)} stray process(es) left by the agents: {strays}")
        if not was_subreaper:  # main() may run inside a longer-lived process (tests, notebooks)
            procs.set_child_subreaper(False)
        if prev_term is not None:
            signal.signal(signal.SIGTERM, prev_term)
    if not_started is not None:
        _err(f"error: {not_started}; the run stopped after this cell ({len(todo) - 1} cell(s) not run; the cell "
             f"is missing, never 0.0): fix --agent-cmd (or --allow-path the agent's installation)")
        return 2
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "none finished"
    print(f"run-b: {len(todo)} cell(s) to run{' (interrupted)' if interrupted else ''}, {skipped} skipped; "
          f"{summary}; results in {out}", file=sys.stderr)
    if interrupted:
        return 130
    return 1 if counts.get("harness_error") or counts.get("runner_error") else 0


if __name__ == "__main__":
    sys.exit(main())
