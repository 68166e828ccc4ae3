"""One Protocol B cell, start to finish (`video-arena run-b` runs many: runner.py).

A fresh sandbox (sandbox.py); the agent command template filled with shell-quoted values; the agent
started through spawn.py (isolated, or under the shepherd), stopped at the wall clock; answer.json
collected, bounded and never through a symlink, its state decided by digest (states.py); the
transcript audited (audit.py); `<out>/<game>/<case_id>/{answer.json, run.json, prompt.txt, logs/}`
written through video_arena/core/results.py.  docs/PROTOCOLS.md, "Protocol B: agentic", lists every
run.json key.  A command is recorded in its redacted form (core/results.py `redact`: secrets masked).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from video_arena import safe_io
from video_arena.core import results as R
from video_arena.core.results import redact
from video_arena.core.instruction import instruction_for, text_digest
from video_arena.core.tasks import GAME_VERSION_KEY, resolve
from video_arena.core.audit import audit_files, turns_reported
from video_arena.protocol_b.isolation import MODE_BWRAP, Isolation
from video_arena.core.prompts import turn1_prompt
from video_arena.protocol_b.sandbox import OpenWatch, Sandbox, agent_environment, create_sandbox, touched
from video_arena.protocol_b.spawn import (LOG_RUNNER, LOG_STDERR, LOG_STDOUT, START_WRAPPER, LogPump, first_word,
                                          read_start, run_isolated, run_shepherd)
from video_arena.protocol_b.states import NEVER_WROTE, AnswerWatch, collect_answer, count_rows, sha256
from video_arena.toolkit_info import toolkit_provenance

RUNNER_VERSION = "video-arena-run-b/2"
#: What a run of a cell leaves in its folder (moved to attempts/<n>/ when the cell is run again)
CELL_FILES = (R.RUN_FILE, R.ANSWER_FILE, R.PROMPT_FILE, "logs")
PLACEHOLDERS = ("sandbox", "prompt", "max_turns", R.REASONING_EFFORT)
_PLACEHOLDER_RE = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
DEFAULT_LOG_CAP_MB = 64
#: the shell's exit codes for a command it could not run (126: found but not executable, 127: not found):
#: however the command is wrapped (`timeout 600 agent`, `env X=1 agent`, `cd dir && agent`,
#: `$HOME/bin/agent`), the wrapper, the program it execs or the shell ends with one of them
COULD_NOT_START_EXITS = (126, 127)


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


def shell_message(path: Path, cap: int = 4096) -> str:
    """The last non-empty line of a log (what the shell said when it could not run a command)."""
    try:
        data = safe_io.read_tail(path, cap)[0]
    except OSError:
        return ""
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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
    bash: str = "/bin/bash"
    isolation: Isolation = field(default_factory=lambda: Isolation("none"))
    log_cap_bytes: int = DEFAULT_LOG_CAP_MB << 20
    reasoning_effort: str | None = None
    preflight: dict[str, Any] = field(default_factory=lambda: {"skipped": True})
    run_token: str = field(default_factory=lambda: secrets.token_hex(4))
    stop: threading.Event = field(default_factory=threading.Event)
    base_env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    #: set once a cell of this run has shown that the agent command starts (runner.py runs one cell
    #: first); until then an exit of 126/127 that left the seed untouched is a start failure: missing
    start_proven: threading.Event = field(default_factory=threading.Event)


class _Log:
    def __init__(self, path: Path):
        self.path = path

    def __call__(self, msg: str) -> None:
        try:  # best effort: a disk the agent filled must not stop the cell from being recorded
            with open(self.path, "a", encoding="utf-8", errors="backslashreplace") as f:  # names the agent chose
                f.write(f"{now_iso()} {msg}\n")
        except OSError:
            pass


def log_text(path: Path) -> str:
    """A log the runner wrote (capped), as text; '' when there is none (its disk was full)."""
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def run_cell(cfg: RunConfig, game: str, case_id: str) -> R.RunRecord | None:
    """Run one cell; returns its run.json record (None when interrupted: the cell stays missing)."""
    cdir = R.cell_dir(cfg.out, game, case_id)
    # what an earlier run left (answer, run.json, prompt, logs) moves to attempts/<n>/, never deleted
    attempt = R.start_attempt(cdir, CELL_FILES)
    logs = cdir / "logs"
    logs.mkdir()
    log = _Log(logs / LOG_RUNNER)
    run = R.RunRecord(protocol="B", model=cfg.model, game=game, case_id=case_id, n_rows=0, started_at=now_iso())
    rec = R.ProtocolBRecord(
        exit_code=None, kill_to_gone_s=None, turns_used=None, max_turns=cfg.max_turns, timeout_min=cfg.timeout_min,
        prompt_sha256=None, seed_sha256=None, sandbox=None, audit=None, reasoning_effort=cfg.reasoning_effort,
        isolation=cfg.isolation.record(), agent_cmd=redact(cfg.agent_cmd), runner=RUNNER_VERSION,
        toolkit=toolkit_provenance(), preflight=cfg.preflight,
        logs={"stdout": f"logs/{LOG_STDOUT}", "stderr": f"logs/{LOG_STDERR}", "runner": f"logs/{LOG_RUNNER}"},
        **attempt.record_keys())

    def write() -> R.RunRecord:
        return R.write_run(cdir, {**run.to_doc(), **rec.to_doc()})

    def write_then_clean(sb: Sandbox | None, answer: bytes | None = None) -> R.RunRecord:
        """The record (and `answer`, the bytes collected) first, then the sandbox's removal, then how that
        went: whatever the agent left behind, its cell is recorded (a clean-up that fails, or a runner
        stopped during it, leaves the record with `sandbox_removed` false or null, never a missing cell).
        A record that cannot be written (the agent filled the disk its sandbox shares with --out) is
        written again once the sandbox is gone."""
        def record() -> R.RunRecord:
            if answer is not None:
                R.write_answer(cdir, answer)
            return write()

        if sb is None or cfg.keep_sandboxes:
            return record()
        rec.sandbox_removed = None
        try:
            written: R.RunRecord | None = record()
        except OSError as exc:
            log(f"the record could not be written ({exc}): the sandbox is removed first")
            written = None
        removal = sb.remove()
        rec.sandbox_removed = removal.removed
        if not removal.removed:
            rec.sandbox_note = removal.note()
            log(f"the sandbox {sb.container} was not removed: {rec.sandbox_note}")
        if written is None:
            return record()  # still no room without the sandbox: a runner error, the cell missing
        try:
            return write()
        except OSError as exc:  # the record of the run stands; only the clean-up's outcome is not in it
            log(f"the clean-up's outcome could not be recorded: {exc}")
            return written

    def harness_error(msg: str, sb: Sandbox | None = None, agent_started: bool | None = None) -> R.RunRecord:
        log(f"harness_error: {msg}")
        run.stop_reason, run.answer_state, run.n_rows, run.finished_at = "harness_error", None, 0, now_iso()
        rec.error = msg
        if agent_started is not None:
            rec.agent_started = agent_started
        safe_io.remove_files(cdir, (R.ANSWER_FILE,))
        return write_then_clean(sb)

    # -- prepare ------------------------------------------------------------------------------
    marker = f"{cfg.run_token}:{secrets.token_hex(6)}"
    try:
        r = resolve(game, case_id, cfg.tasks_root, cfg.media_root)
        run.game_version = r[GAME_VERSION_KEY]
        instruction = instruction_for("agentic", r["instruction"])
        seed = Path(r["answer_seed"]).read_bytes()
        sb = create_sandbox(
            cfg.sandbox_base, media=Path(r["media"]), instruction_text=instruction, seed_bytes=seed,
            prompt_for=lambda workdir: turn1_prompt(workdir, cfg.max_turns, cfg.timeout_min),
            marker=marker, hardlink_media=cfg.hardlink_media)
    except Exception as exc:  # noqa: BLE001 - every failure here means the agent never started
        return harness_error(f"could not prepare the sandbox: {exc}")
    run.instruction_sha256, rec.prompt_sha256 = sb.instruction_sha256, sb.prompt_sha256
    # The prompt names the (random) sandbox; this digest is of the same text with the path replaced by
    # "{sandbox}", comparable across cells and runs.
    rec.prompt_template_sha256 = text_digest(turn1_prompt("{sandbox}", cfg.max_turns, cfg.timeout_min))
    rec.seed_sha256, rec.sandbox = sha256(seed), str(sb.path)
    shutil.copyfile(sb.prompt_path, cdir / R.PROMPT_FILE)
    try:
        command = fill_template(cfg.agent_cmd, {"sandbox": str(sb.path), "prompt": str(sb.prompt_path),
                                                "max_turns": str(cfg.max_turns),
                                                R.REASONING_EFFORT: cfg.reasoning_effort or ""})
    except TemplateError as exc:
        return harness_error(str(exc), sb)
    rec.command = redact(command)
    env, scrubbed = agent_environment(cfg.base_env, cfg.forbidden, sb.path, marker)
    rec.env_scrubbed = scrubbed
    log(f"sandbox {sb.path}; command: {redact(command)}")

    # -- run ----------------------------------------------------------------------------------
    wrapper = [cfg.bash, "-c", START_WRAPPER, cfg.bash]
    word = first_word(command)
    timeout_s = cfg.timeout_min * 60.0
    start_r, start_w = os.pipe()
    wrapper += [str(start_w), command, word]
    pumps: list[LogPump] = []
    before = sb.state()
    opens = OpenWatch(sb.path) if not cfg.start_proven.is_set() else None  # the start rule's evidence
    watch = AnswerWatch(sb.answer_path, sb.seed_bytes)
    watch.start()
    try:
        if cfg.isolation.mode == MODE_BWRAP:
            res = run_isolated(cfg, sb, env, wrapper, start_w, timeout_s, log, pumps, logs)
        else:
            res = run_shepherd(cfg, sb, env, wrapper, start_w, timeout_s, log, pumps, logs, marker)
        if restored := sb.restore_access():  # the agent is gone; what it left is collected as it left it
            log(f"the owner's access restored to the sandbox's {' and '.join(restored)}")
    finally:
        watch.stop()
    outcome, exit_code, kill, t_spawn, spawn_error = res
    rec.answer_history = watch.history
    if watch.history_truncated:
        rec.answer_history_truncated = True
    t_gone = time.monotonic()
    started, nostart = read_start(start_r)
    for pump in pumps:  # every writer is dead: EOF; a --no-isolation survivor is not waited for
        pump.join(timeout=5.0 if cfg.isolation.mode == MODE_BWRAP else 1.0)
    rec.logs_bytes = {p.key: p.total for p in pumps}
    truncated = {p.key: p.total - p.written for p in pumps if p.total > p.written}
    rec.logs_cap_bytes = cfg.log_cap_bytes
    rec.logs_truncated = truncated or None
    for pump in pumps:
        if pump.error:
            log(f"the {pump.key} log could not be written ({pump.error}): the rest of it was dropped")
        elif pump.key in truncated:
            log(f"log cap {cfg.log_cap_bytes} bytes reached: dropped {truncated[pump.key]} bytes of {pump.key}")
    if spawn_error:
        return harness_error(spawn_error, sb)
    if kill is not None:
        log(f"killed ({kill.reason}): {json.dumps(kill.as_dict())}")
        if kill.survivors:
            log(f"WARNING: processes survived SIGKILL: {kill.survivors}")
    if outcome == "interrupted":
        log("interrupted: the cell stays missing (no run.json)")
        if not cfg.keep_sandboxes and not (removal := sb.remove()).removed:
            log(f"the sandbox {sb.container} was not removed: {removal.note()}")
        return None
    if not started:
        # No start marker: the agent command was never exec'd (bwrap or the shell failed first,
        # or its program is not there).  Missing, re-run next time.
        err = log_text(logs / LOG_STDERR)[-2000:].strip()
        if nostart:
            why = {"not-found": "command not found", "not-executable": "not executable"}.get(nostart, nostart)
            hint = (" inside the isolation (allow its installation with --allow-path)"
                    if cfg.isolation.mode == MODE_BWRAP and nostart == "not-found" else "")
            msg = f"the shell could not start the agent command ({word}: {why}{hint})"
        else:
            msg = f"the agent command was never started (exit {exit_code}; outcome {outcome})"
        return harness_error(f"{msg}: {err}" if err else msg, sb, agent_started=False)

    # -- collect (the tree is gone): the sandbox's state, its answer, the transcript -----------------
    evidence = touched(before, sb.state())
    evidence += [f"{name} opened" for name in ((opens.opened() if opens else None) or [])]
    collected = collect_answer(sb.answer_path, sb.seed_bytes)
    turns = turns_reported(log_text(logs / LOG_STDOUT))
    if turns is None:
        turns = turns_reported(log_text(logs / LOG_STDERR))
    rec.audit = audit_files({"stdout": logs / LOG_STDOUT, "stderr": logs / LOG_STDERR})
    if turns:
        evidence.append(f"{turns} turn(s) reported")
    if rec.audit.get("agent_actions"):
        evidence.append(f"{rec.audit['agent_actions']} action(s) in the transcript")
    if collected.state != NEVER_WROTE:
        evidence.append(f"answer {collected.state}")
    if not cfg.start_proven.is_set() and outcome == "exited" and exit_code != 0 and not evidence:
        # The run's first cell ended in an error and the agent left no trace of having worked: the shell
        # could not run what the command names (126/127, however it is wrapped), or an interpreter could
        # not open the agent's script or import its modules, or the agent failed before it began.  The
        # cell is missing, never 0.0 (the runner stops the run here).  docs/PROTOCOLS.md, "Does the agent
        # start at all".
        said = shell_message(logs / LOG_STDERR) or shell_message(logs / LOG_STDOUT)
        rec.exit_code = exit_code
        what = ("could not start" if exit_code in COULD_NOT_START_EXITS
                else "failed before it touched its sandbox")
        return harness_error(f"the agent command {what} (exit {exit_code}"
                             f"{': ' + said if said else ', nothing printed'})", sb, agent_started=False)
    if not cfg.start_proven.is_set():
        log(f"first cell: {outcome}, exit {exit_code}; the agent ran: {', '.join(evidence) or 'it exited 0'}")
    rec.exit_code, run.wall_s = exit_code, round(t_gone - t_spawn, 3)
    rec.kill_to_gone_s = None if kill is None else round(kill.gone_s, 3)
    rec.kill = None if kill is None else kill.as_dict()
    run.answer_state, run.answer_sha256 = collected.state, collected.answer_sha256 or None
    if collected.note:
        rec.answer_note = collected.note
    if outcome == "timeout":
        run.stop_reason = "timeout"
    elif exit_code == 0:
        run.stop_reason = "completed"
    else:
        run.stop_reason = "agent_error"  # it started (the marker says so): a failure is scored
    run.n_rows = count_rows(collected.export)
    rec.turns_used = turns
    if turns is None:
        rec.turns_used_note = ("not reported: the transcript holds no {\"turns\": N} line nor a Claude Code "
                                  "num_turns" + ("; the logs were truncated at the cap" if truncated else ""))
    rec.sandbox_kept = cfg.keep_sandboxes
    run.finished_at = now_iso()
    log(f"done: {run.stop_reason} {run.answer_state} rows={run.n_rows} audit={rec.audit['verdict']}")
    return write_then_clean(sb, collected.export)
