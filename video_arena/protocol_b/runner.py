"""`video-arena run-b` (and `run_protocol_b.py`): Protocol B natively, with any agent CLI.

    video-arena run-b --agent-cmd 'my-agent --cwd {sandbox} --prompt-file {prompt} --max-turns {max_turns}' \\
        --out results/b-mymodel --model my-model [--games chess,go] [--limit N] [--tasks-root DIR] \\
        [--max-turns 200] [--timeout-min 120] [--sandbox-root DIR] [--skip-preflight] [--workers 3] [--force]

Per cell (one case of one game): a fresh sandbox (sandbox.py), the agent command run by a shell
with the sandbox as its working directory, in a session of its own, stdout/stderr captured as the
transcript; at --timeout-min the agent's whole process tree is killed (procs.py); then answer.json
is collected and its state decided by digest (states.py), the transcript audited (audit.py), and
`<out>/<game>/<case_id>/{answer.json, run.json, prompt.txt, logs/}` written.  See
docs/PROTOCOLS.md, "Protocol B: agentic", for every run.json key.

Template placeholders: `{sandbox}` (the working directory), `{prompt}` (the path of prompt.txt),
`{max_turns}`; each is replaced by a shell-quoted value, so do not quote them yourself.  Any other
`{name}` is a template error (a `${name}` shell expansion is left alone).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import secrets
import select
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from video_arena import paths
from video_arena.core.instruction import instruction_for, text_digest
from video_arena.core.tasks import iter_cases, resolve
from video_arena.protocol_b import procs
from video_arena.protocol_b.audit import audit_files, turns_reported
from video_arena.protocol_b.preflight import run_preflight
from video_arena.protocol_b.prompt import turn1_prompt
from video_arena.protocol_b.sandbox import (CELL_MARKER_ENV, SandboxError, agent_environment,
                                            ancestor_warnings, check_sandbox_root, create_sandbox,
                                            forbidden_roots)
from video_arena.protocol_b.states import NEVER_WROTE, collect_answer, count_rows, sha256

RUNNER_VERSION = "video-arena-run-b/1"
PLACEHOLDERS = ("sandbox", "prompt", "max_turns")
_PLACEHOLDER_RE = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SECRET_RE = re.compile(r"(?i)((?:key|token|secret|password|passwd|auth)[\w-]*\s*[=:]\s*)(\S+)")
#: Exit codes with which a shell reports that it could not start the command at all.
SHELL_NOT_STARTED = (126, 127)
LOG_STDOUT, LOG_STDERR, LOG_RUNNER = "agent.stdout.log", "agent.stderr.log", "runner.log"


class TemplateError(ValueError):
    pass


def fill_template(template: str, values: dict[str, str]) -> str:
    """Replace `{sandbox}`, `{prompt}`, `{max_turns}` with shell-quoted values; others are errors."""
    if not template.strip():
        raise TemplateError("--agent-cmd is empty")

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in values:
            raise TemplateError(f"unknown placeholder {{{name}}} in --agent-cmd "
                                f"(known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)})")
        return shlex.quote(str(values[name]))

    return _PLACEHOLDER_RE.sub(sub, template)


def redact(command: str) -> str:
    """The command as recorded in run.json: values of KEY=/TOKEN=/... assignments masked."""
    return _SECRET_RE.sub(lambda m: m.group(1) + "***", command)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def write_json_atomic(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@dataclass
class RunConfig:
    agent_cmd: str
    out: Path
    tasks_root: Path
    media_root: Path
    sandbox_base: Path
    forbidden: list[Path]
    max_turns: int = 200
    timeout_min: float = 120.0
    model: str = "unknown"
    kill_grace_s: float = 5.0
    keep_sandboxes: bool = False
    hardlink_media: bool = False
    shell: str = "/bin/sh"
    preflight: dict[str, Any] = field(default_factory=lambda: {"skipped": True})
    run_token: str = field(default_factory=lambda: secrets.token_hex(4))
    stop: threading.Event = field(default_factory=threading.Event)
    base_env: dict[str, str] = field(default_factory=lambda: dict(os.environ))


def cell_dir(out: Path, game: str, case_id: str) -> Path:
    return out / game / case_id


def is_finished(cdir: Path) -> bool:
    """A cell is finished (skipped on resume) when its run.json says it ran: not harness_error."""
    try:
        doc = json.loads((cdir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("stop_reason") not in (None, "harness_error")


def clear_predecessor(cdir: Path) -> None:
    """A re-run first deletes the answer, run.json, prompt and logs an earlier run left."""
    for name in ("run.json", "answer.json", "prompt.txt"):
        try:
            (cdir / name).unlink()
        except FileNotFoundError:
            pass
    shutil.rmtree(cdir / "logs", ignore_errors=True)


class _Log:
    def __init__(self, path: Path):
        self.path = path

    def __call__(self, msg: str) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(f"{now_iso()} {msg}\n")


SHEPHERD_SOURCE = (Path(__file__).resolve().parent / "shepherd.py").read_text(encoding="utf-8")


class _ShepherdStatus:
    """Lines `pid N` and `exit N` the shepherd writes to its status pipe."""

    def __init__(self, fd: int):
        self.fd, self.buf, self.eof = fd, b"", False
        self.values: dict[str, int] = {}

    def wait_for(self, key: str, until: float) -> int | None:
        while key not in self.values and not self.eof:
            left = until - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                break
            data = os.read(self.fd, 4096)
            if not data:
                self.eof = True
                break
            self.buf += data
            *lines, self.buf = self.buf.split(b"\n")
            for line in lines:
                k, _, v = line.decode("ascii", "replace").partition(" ")
                try:
                    self.values[k] = int(v)
                except ValueError:
                    pass
        return self.values.get(key)

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def _release_shepherd(shep: subprocess.Popen, log) -> None:
    """Close the shepherd's stdin (it then kills anything left below it and exits) and reap it."""
    try:
        if shep.stdin:
            shep.stdin.close()
    except OSError:
        pass
    try:
        shep.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - the shepherd exits on EOF
        log(f"the shepherd {shep.pid} did not exit on EOF: killed")
        shep.kill()
        shep.wait()


def run_cell(cfg: RunConfig, game: str, case_id: str) -> dict[str, Any] | None:
    """Run one cell; returns its run.json record (None when interrupted: the cell stays missing)."""
    cdir = cell_dir(cfg.out, game, case_id)
    cdir.mkdir(parents=True, exist_ok=True)
    clear_predecessor(cdir)
    logs = cdir / "logs"
    logs.mkdir()
    log = _Log(logs / LOG_RUNNER)
    rec: dict[str, Any] = {
        "protocol": "B", "model": cfg.model, "game": game, "case_id": case_id,
        "stop_reason": None, "exit_code": None, "answer_state": None, "n_rows": 0,
        "wall_s": None, "kill_to_gone_s": None, "turns_used": None,
        "max_turns": cfg.max_turns, "timeout_min": cfg.timeout_min,
        "instruction_sha256": None, "prompt_sha256": None, "seed_sha256": None, "answer_sha256": None,
        "sandbox": None, "audit": None, "started_at": now_iso(), "finished_at": None,
        "agent_cmd": redact(cfg.agent_cmd), "runner": RUNNER_VERSION, "preflight": cfg.preflight,
        "logs": {"stdout": f"logs/{LOG_STDOUT}", "stderr": f"logs/{LOG_STDERR}", "runner": f"logs/{LOG_RUNNER}"},
    }

    def harness_error(msg: str, sb=None) -> dict[str, Any]:
        log(f"harness_error: {msg}")
        rec.update(stop_reason="harness_error", answer_state=None, n_rows=0, error=msg,
                   finished_at=now_iso())
        try:
            (cdir / "answer.json").unlink()
        except FileNotFoundError:
            pass
        if sb is not None and not cfg.keep_sandboxes:
            sb.remove()
        write_json_atomic(cdir / "run.json", rec)
        return rec

    # -- prepare ------------------------------------------------------------------------------
    marker = f"{cfg.run_token}:{secrets.token_hex(6)}"
    try:
        r = resolve(game, case_id, cfg.tasks_root, cfg.media_root)
        instruction = instruction_for("agentic", r["instruction"])
        seed = Path(r["answer_seed"]).read_bytes()
        sb = create_sandbox(
            cfg.sandbox_base, media=Path(r["media"]), instruction_text=instruction, seed_bytes=seed,
            prompt_for=lambda workdir: turn1_prompt(workdir, cfg.max_turns, cfg.timeout_min),
            marker=marker, hardlink_media=cfg.hardlink_media)
    except Exception as exc:  # noqa: BLE001 - every failure here means the agent never started
        return harness_error(f"could not prepare the sandbox: {exc}")
    rec.update(instruction_sha256=sb.instruction_sha256, prompt_sha256=sb.prompt_sha256,
               # The prompt names the (random) sandbox; this digest is of the same text with the
               # path replaced by "{sandbox}", comparable across cells and runs.
               prompt_template_sha256=text_digest(turn1_prompt("{sandbox}", cfg.max_turns, cfg.timeout_min)),
               seed_sha256=sha256(seed), sandbox=str(sb.path))
    shutil.copyfile(sb.prompt_path, cdir / "prompt.txt")
    try:
        command = fill_template(cfg.agent_cmd, {"sandbox": str(sb.path), "prompt": str(sb.prompt_path),
                                                "max_turns": str(cfg.max_turns)})
    except TemplateError as exc:
        return harness_error(str(exc), sb)
    rec["command"] = redact(command)
    env, scrubbed = agent_environment(cfg.base_env, cfg.forbidden, sb.path, marker)
    rec["env_scrubbed"] = scrubbed
    log(f"sandbox {sb.path}; command: {redact(command)}")

    # -- run ----------------------------------------------------------------------------------
    timeout_s = cfg.timeout_min * 60.0
    status_r, status_w = os.pipe()
    try:
        with open(logs / LOG_STDOUT, "wb") as out_f, open(logs / LOG_STDERR, "wb") as err_f:
            with procs.SPAWN_LOCK:
                try:
                    shep = subprocess.Popen(
                        [sys.executable or "python3", "-I", "-c", SHEPHERD_SOURCE, str(status_w),
                         cfg.shell, "-c", command],
                        cwd=sb.path, env=env, stdin=subprocess.PIPE, stdout=out_f, stderr=err_f,
                        start_new_session=True, close_fds=True, pass_fds=(status_w,))
                except OSError as exc:
                    os.close(status_r)
                    return harness_error(f"could not start the agent command: {exc}", sb)
                procs.register_active(shep.pid)
    finally:
        os.close(status_w)
    t_spawn = time.monotonic()
    deadline = t_spawn + timeout_s
    status = _ShepherdStatus(status_r)
    outcome, exit_code, kill, tree = None, None, None, None
    try:
        agent_pid = status.wait_for("pid", time.monotonic() + 30.0)
        if agent_pid is None:
            outcome = "not_started"
        else:
            tree = procs.CellProcesses(agent_pid, shep.pid, str(sb.path), CELL_MARKER_ENV, marker)
            while outcome is None:
                if time.monotonic() >= deadline:
                    outcome = "timeout"
                elif status.wait_for("exit", min(deadline, time.monotonic() + 0.25)) is not None:
                    outcome, exit_code = "exited", status.values["exit"]
                elif status.eof:  # the shepherd died: should not happen; treat as an agent exit
                    outcome = "exited"
                    log("the shepherd exited before reporting the agent's exit status")
                elif cfg.stop.is_set():
                    outcome = "interrupted"
            if outcome == "exited":
                t_exit = time.monotonic()
                if tree.scan():  # a launcher that exited and left children running
                    kill = tree.kill_all("exited", cfg.kill_grace_s, started=t_exit)
            elif outcome == "timeout":
                # Measured from the limit itself, so any lag in noticing it is counted too.
                kill = tree.kill_all("limit", cfg.kill_grace_s, started=deadline)
            else:
                kill = tree.kill_all("interrupt", cfg.kill_grace_s)
    finally:
        _release_shepherd(shep, log)
        procs.unregister_active(shep.pid)
        status.close()
        procs.reap_orphan_zombies()
    if outcome == "not_started":
        return harness_error("the agent was not started (its shepherd process failed; see logs)", sb)
    t_gone = time.monotonic()
    if kill is not None:
        log(f"killed ({kill.reason}): {json.dumps(kill.as_dict())}")
        if kill.survivors:
            log(f"WARNING: processes survived SIGKILL: {kill.survivors}")
    if outcome == "interrupted":
        log("interrupted: the cell stays missing (no run.json)")
        if not cfg.keep_sandboxes:
            sb.remove()
        return None

    # -- collect (the tree is gone) -------------------------------------------------------------
    collected = collect_answer(sb.answer_path, sb.seed_bytes)
    rec.update(exit_code=exit_code, wall_s=round(t_gone - t_spawn, 3),
               kill_to_gone_s=None if kill is None else round(kill.gone_s, 3),
               kill=None if kill is None else kill.as_dict(),
               answer_state=collected.state, answer_sha256=collected.answer_sha256 or None)
    if collected.note:
        rec["answer_note"] = collected.note
    if outcome == "timeout":
        rec["stop_reason"] = "timeout"
    elif exit_code == 0:
        rec["stop_reason"] = "completed"
    elif exit_code in SHELL_NOT_STARTED and collected.state == NEVER_WROTE:
        err = (logs / LOG_STDERR).read_bytes()[-2000:].decode("utf-8", "replace").strip()
        return harness_error(f"the shell could not start the agent command (exit {exit_code}: "
                             f"{'command not found' if exit_code == 127 else 'not executable'}): {err}", sb)
    else:
        rec["stop_reason"] = "agent_error"
    (cdir / "answer.json").write_bytes(collected.export)
    rec["n_rows"] = count_rows(collected.export)
    stdout_text = (logs / LOG_STDOUT).read_bytes().decode("utf-8", "replace")
    turns = turns_reported(stdout_text)
    if turns is None:
        turns = turns_reported((logs / LOG_STDERR).read_bytes().decode("utf-8", "replace"))
    rec["turns_used"] = turns
    rec["audit"] = audit_files({"stdout": logs / LOG_STDOUT, "stderr": logs / LOG_STDERR})
    rec["sandbox_kept"] = cfg.keep_sandboxes
    if not cfg.keep_sandboxes:
        sb.remove()
    rec["finished_at"] = now_iso()
    write_json_atomic(cdir / "run.json", rec)
    log(f"done: {rec['stop_reason']} {rec['answer_state']} rows={rec['n_rows']} audit={rec['audit']['verdict']}")
    return rec


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="video-arena run-b", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agent-cmd", required=True,
                    help="shell command template; {sandbox}, {prompt}, {max_turns} are filled per cell")
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
    return ap


def _err(msg: str) -> None:
    print(f"video-arena run-b: {msg}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.max_turns < 0 or a.timeout_min <= 0 or a.workers < 1 or (a.limit is not None and a.limit < 1) \
            or a.kill_grace_s < 0:
        _err("--max-turns must be >= 0, --timeout-min > 0, --workers >= 1, --limit >= 1, --kill-grace-s >= 0")
        return 2
    try:
        tasks_root = paths.tasks_root(a.tasks_root)
        media_root = paths.media_root(tasks_root, a.media_root)
        forbidden = forbidden_roots(tasks_root, media_root)
        sandbox_base = check_sandbox_root(a.sandbox_root, forbidden)
        games = [g.strip() for g in a.games.split(",") if g.strip()] if a.games else None
        cells = [(g, c["case_id"]) for g, c in iter_cases(tasks_root, games, a.limit)]
    except (SandboxError, FileNotFoundError, LookupError, ValueError) as exc:
        _err(str(exc))
        return 2
    for w in ancestor_warnings(sandbox_base, forbidden):
        _err(f"warning: {w}")
    out = Path(a.out).expanduser().resolve()
    for f in forbidden[1:]:
        if out == f or f in out.parents:
            _err(f"--out {out} is inside the tasks tree or media root {f}; write results elsewhere")
            return 2
    cfg = RunConfig(agent_cmd=a.agent_cmd, out=out, tasks_root=tasks_root, media_root=media_root,
                    sandbox_base=sandbox_base, forbidden=forbidden, max_turns=a.max_turns,
                    timeout_min=a.timeout_min, model=a.model, kill_grace_s=a.kill_grace_s,
                    keep_sandboxes=a.keep_sandboxes, hardlink_media=a.hardlink_media,
                    shell=shutil.which("bash") or "/bin/sh")
    try:
        fill_template(a.agent_cmd, {p: "x" for p in PLACEHOLDERS})
        if "{prompt}" not in a.agent_cmd:
            _err("warning: --agent-cmd has no {prompt}: the agent will not be given the turn-1 prompt")
    except TemplateError as exc:
        _err(f"warning: {exc}: every cell will be recorded as harness_error (missing)")
    if not cells:
        _err(f"no cases to run in {tasks_root} (games: {games or 'all'}); nothing done")
        return 0
    if a.skip_preflight:
        cfg.preflight = {"skipped": True}
    else:
        env, _ = agent_environment(cfg.base_env, forbidden, sandbox_base, "preflight")
        pf = run_preflight(env)
        for w in pf.warnings:
            _err(f"preflight warning: {w}")
        if not pf.ok:
            for e in pf.errors:
                _err(f"preflight error: {e}")
            _err("no cell was run (--skip-preflight if the agent brings its own toolset)")
            return 2
        cfg.preflight = {"skipped": False, **pf.summary()}

    todo = [(g, c) for g, c in cells if a.force or not is_finished(cell_dir(out, g, c))]
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
    from tqdm import tqdm

    bar = tqdm(total=len(todo), desc="run-b", unit="cell", disable=None)
    pool = cf.ThreadPoolExecutor(max_workers=a.workers)
    try:
        futures = {pool.submit(run_cell, cfg, g, c): (g, c) for g, c in todo}
        pending = set(futures)
        while pending:
            done, pending = cf.wait(pending, timeout=0.5, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                g, c = futures[fut]
                try:
                    rec = fut.result()
                except Exception as exc:  # noqa: BLE001 - a runner bug must not stop the other cells
                    _err(f"{g}/{c}: runner error {exc!r} (no run.json: the cell is missing)")
                    counts["runner_error"] = counts.get("runner_error", 0) + 1
                    bar.update(1)
                    continue
                label = "interrupted" if rec is None else (
                    rec["stop_reason"] if rec["stop_reason"] == "harness_error"
                    else f"{rec['answer_state']}")
                counts[label] = counts.get(label, 0) + 1
                bar.set_postfix(counts, refresh=False)
                bar.update(1)
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
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "none finished"
    print(f"run-b: {len(todo)} cell(s) to run{' (interrupted)' if interrupted else ''}, {skipped} skipped; "
          f"{summary}; results in {out}", file=sys.stderr)
    if interrupted:
        return 130
    return 1 if counts.get("harness_error") or counts.get("runner_error") else 0


if __name__ == "__main__":
    sys.exit(main())
