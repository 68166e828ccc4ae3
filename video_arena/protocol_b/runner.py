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
from video_arena.progress import bar as progress_bar
from video_arena.core.instruction import instruction_for, text_digest
from video_arena.core.tasks import iter_cases, resolve
from video_arena.protocol_b import procs
from video_arena.protocol_b.audit import audit_files, turns_reported
from video_arena.protocol_b.isolation import MODE_BWRAP, Isolation, IsolationError, make_isolation
from video_arena.protocol_b.preflight import run_preflight
from video_arena.protocol_b.prompt import turn1_prompt
from video_arena.protocol_b.sandbox import (CELL_MARKER_ENV, SandboxError, agent_environment,
                                            ancestor_warnings, check_sandbox_root, create_sandbox,
                                            forbidden_roots)
from video_arena.protocol_b.states import AnswerWatch, collect_answer, count_rows, sha256
from video_arena.toolkit_info import toolkit_provenance

RUNNER_VERSION = "video-arena-run-b/2"
PLACEHOLDERS = ("sandbox", "prompt", "max_turns", "reasoning_effort")
_EFFORT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
_PLACEHOLDER_RE = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SECRET_RE = re.compile(r"(?i)((?:key|token|secret|password|passwd|auth)[\w-]*\s*[=:]\s*)(\S+)")
LOG_STDOUT, LOG_STDERR, LOG_RUNNER = "agent.stdout.log", "agent.stderr.log", "runner.log"
DEFAULT_LOG_CAP_MB = 64
#: Shell words after which the first word of --agent-cmd is not a program to look up.
_SHELL_SYNTAX = set("(){}|;&<>$`\\'\"")
_SHELL_KEYWORDS = {"if", "for", "while", "until", "case", "select", "function", "time", "!", "[[", "{", "("}

#: Run by bash with argv: START_FD COMMAND FIRST_WORD.  It checks that the command's first word is a
#: program it can run (else reports `nostart <why>` and exits 126/127: the agent provably never
#: started), writes the start marker, closes the marker's pipe (the agent never holds it) and execs
#: the agent command.  Everything after the marker is the agent's doing, and is scored.
START_WRAPPER = r"""fd=$1; cmd=$2; w=$3
if [ -n "$w" ] && ! command -v -- "$w" >/dev/null 2>&1; then
  r=not-found; c=127
  case $w in */*) if [ -e "$w" ]; then r=not-executable; c=126; fi;; esac
  printf 'nostart %s\n' "$r" >&"$fd"
  printf 'video-arena run-b: %s: %s\n' "$w" "$r" >&2
  exit $c
fi
printf 'start\n' >&"$fd"
eval "exec $fd>&-"
exec "$0" -c "$cmd"
"""


def first_word(command: str) -> str:
    """The program the shell will run first, when plainly readable ("" when it is not: then the
    wrapper does not check it)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    for w in words:
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w):
            continue  # an assignment prefix: VAR=x agent ...
        if w in _SHELL_KEYWORDS or any(c in _SHELL_SYNTAX for c in w):
            return ""
        return w
    return ""


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
    bash: str = "/bin/bash"
    isolation: Isolation = field(default_factory=lambda: Isolation("none"))
    log_cap_bytes: int = DEFAULT_LOG_CAP_MB << 20
    reasoning_effort: str | None = None
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
        "reasoning_effort": cfg.reasoning_effort, "isolation": cfg.isolation.record(),
        "agent_cmd": redact(cfg.agent_cmd), "runner": RUNNER_VERSION, "toolkit": toolkit_provenance(),
        "preflight": cfg.preflight,
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
                                                "max_turns": str(cfg.max_turns),
                                                "reasoning_effort": cfg.reasoning_effort or ""})
    except TemplateError as exc:
        return harness_error(str(exc), sb)
    rec["command"] = redact(command)
    env, scrubbed = agent_environment(cfg.base_env, cfg.forbidden, sb.path, marker)
    rec["env_scrubbed"] = scrubbed
    log(f"sandbox {sb.path}; command: {redact(command)}")

    # -- run ----------------------------------------------------------------------------------
    wrapper = [cfg.bash, "-c", START_WRAPPER, cfg.bash]
    word = first_word(command)
    timeout_s = cfg.timeout_min * 60.0
    start_r, start_w = os.pipe()
    wrapper += [str(start_w), command, word]
    pumps: list[_LogPump] = []
    watch = AnswerWatch(sb.answer_path, sb.seed_bytes)
    watch.start()
    try:
        if cfg.isolation.mode == MODE_BWRAP:
            res = _run_isolated(cfg, sb, env, wrapper, start_w, timeout_s, log, pumps, logs)
        else:
            res = _run_shepherd(cfg, sb, env, wrapper, start_w, timeout_s, log, pumps, logs, marker)
    finally:
        watch.stop()
    outcome, exit_code, kill, t_spawn, spawn_error = res
    rec["answer_history"] = watch.history
    if watch.history_truncated:
        rec["answer_history_truncated"] = True
    t_gone = time.monotonic()
    started, nostart = _read_start(start_r)
    for pump in pumps:  # every writer is dead: EOF; a --no-isolation survivor is not waited for
        pump.join(timeout=5.0 if cfg.isolation.mode == MODE_BWRAP else 1.0)
    rec["logs_bytes"] = {p.key: p.total for p in pumps}
    truncated = {p.key: p.total - p.written for p in pumps if p.total > p.written}
    rec["logs_cap_bytes"] = cfg.log_cap_bytes
    rec["logs_truncated"] = truncated or None
    if truncated:
        log(f"log cap {cfg.log_cap_bytes} bytes reached: dropped {truncated}")
    if spawn_error:
        return harness_error(spawn_error, sb)
    if kill is not None:
        log(f"killed ({kill.reason}): {json.dumps(kill.as_dict())}")
        if kill.survivors:
            log(f"WARNING: processes survived SIGKILL: {kill.survivors}")
    if outcome == "interrupted":
        log("interrupted: the cell stays missing (no run.json)")
        if not cfg.keep_sandboxes:
            sb.remove()
        return None
    if not started:
        # No start marker: the agent command was never exec'd (bwrap or the shell failed first,
        # or its program is not there).  Missing, re-run next time.
        err = (logs / LOG_STDERR).read_bytes()[-2000:].decode("utf-8", "replace").strip()
        if nostart:
            why = {"not-found": "command not found", "not-executable": "not executable"}.get(nostart, nostart)
            hint = (" inside the isolation (allow its installation with --allow-path)"
                    if cfg.isolation.mode == MODE_BWRAP and nostart == "not-found" else "")
            msg = f"the shell could not start the agent command ({word}: {why}{hint})"
        else:
            msg = f"the agent command was never started (exit {exit_code}; outcome {outcome})"
        return harness_error(f"{msg}: {err}" if err else msg, sb)

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
    else:
        rec["stop_reason"] = "agent_error"  # it started (the marker says so): a failure is scored
    (cdir / "answer.json").write_bytes(collected.export)
    rec["n_rows"] = count_rows(collected.export)
    stdout_text = (logs / LOG_STDOUT).read_bytes().decode("utf-8", "replace")
    turns = turns_reported(stdout_text)
    if turns is None:
        turns = turns_reported((logs / LOG_STDERR).read_bytes().decode("utf-8", "replace"))
    rec["turns_used"] = turns
    if turns is None:
        rec["turns_used_note"] = ("not reported: the transcript holds no {\"turns\": N} line nor a Claude Code "
                                  "num_turns" + ("; the logs were truncated at the cap" if truncated else ""))
    rec["audit"] = audit_files({"stdout": logs / LOG_STDOUT, "stderr": logs / LOG_STDERR})
    rec["sandbox_kept"] = cfg.keep_sandboxes
    if not cfg.keep_sandboxes:
        sb.remove()
    rec["finished_at"] = now_iso()
    write_json_atomic(cdir / "run.json", rec)
    log(f"done: {rec['stop_reason']} {rec['answer_state']} rows={rec['n_rows']} audit={rec['audit']['verdict']}")
    return rec


class _LogPump(threading.Thread):
    """Copies one of the agent's output pipes into its log file, at most `cap` bytes; reads (and
    counts, and drops) the rest so the agent never blocks on a full pipe."""

    def __init__(self, name: str, fd: int, path: Path, cap: int):
        super().__init__(daemon=True, name=f"run-b-log-{name}")
        self.key, self.fd, self.path, self.cap = name, fd, path, cap
        self.total = self.written = 0

    def run(self) -> None:
        with open(self.path, "wb") as f:
            try:
                while True:
                    try:
                        data = os.read(self.fd, 1 << 16)
                    except OSError:
                        break
                    if not data:
                        break
                    self.total += len(data)
                    room = self.cap - self.written
                    if room > 0:
                        f.write(data[:room])
                        f.flush()
                        self.written += min(room, len(data))
            finally:
                os.close(self.fd)


def _start_pumps(stdout_fd: int, stderr_fd: int, logs: Path, cap: int, pumps: list) -> None:
    for name, fd, fname in (("stdout", stdout_fd, LOG_STDOUT), ("stderr", stderr_fd, LOG_STDERR)):
        pump = _LogPump(name, fd, logs / fname, cap)
        pump.start()
        pumps.append(pump)


def _read_start(fd: int) -> tuple[bool, str | None]:
    """(started, nostart reason) from the wrapper's marker pipe; closes it."""
    buf = b""
    try:
        while select.select([fd], [], [], 0)[0]:
            data = os.read(fd, 4096)
            if not data:
                break
            buf += data
            if len(buf) > 4096:
                break
    except OSError:
        pass
    finally:
        os.close(fd)
    lines = buf.decode("ascii", "replace").splitlines()
    if lines and lines[0] == "start":
        return True, None
    if lines and lines[0].startswith("nostart "):
        return False, lines[0].split(" ", 1)[1]
    return False, None


def _info_child_pid(fd: int, until: float) -> int | None:
    """bwrap's --info-fd JSON ({"child-pid": N, ...}): the host pid of the namespace's init.  Read to
    its end (bwrap closes it): closing our end early would kill bwrap with SIGPIPE."""
    buf = b""
    try:
        while time.monotonic() < until:
            ready, _, _ = select.select([fd], [], [], max(0.0, until - time.monotonic()))
            if not ready:
                break
            data = os.read(fd, 4096)
            if not data:
                break
            buf += data
    except OSError:
        pass
    m = re.search(rb'"child-pid"\s*:\s*(\d+)', buf)
    return int(m.group(1)) if m else None


def _run_isolated(cfg, sb, env, wrapper, start_w, timeout_s, log, pumps, logs):
    """The cell under bwrap (isolation.py).  Returns (outcome, exit_code, kill, t_spawn, spawn_error)."""
    iso: Isolation = cfg.isolation
    info_r, info_w = os.pipe()
    args = [*iso.mount_args(rw=[sb.path], ro=[sb.prompt_path]), "--chdir", str(sb.path),
            "--info-fd", str(info_w), "--"]
    # The arguments go through a memfd, so the namespace's init (bwrap, visible inside as PID 1)
    # shows only `bwrap --args N` as its command line.
    args_fd = os.memfd_create("run-b-args", 0)
    os.write(args_fd, b"".join(a.encode() + b"\0" for a in args))
    os.lseek(args_fd, 0, os.SEEK_SET)
    t_spawn = time.monotonic()
    try:
        with procs.SPAWN_LOCK:
            try:
                proc = subprocess.Popen([iso.bwrap, "--args", str(args_fd), *wrapper], env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=True, close_fds=True,
                                        pass_fds=(start_w, info_w, args_fd))
            except OSError as exc:
                os.close(info_r)
                return "not_started", None, None, t_spawn, f"could not start bwrap: {exc}"
            procs.register_active(proc.pid)
    finally:
        for fd in (start_w, info_w, args_fd):
            os.close(fd)
    _start_pumps(os.dup(proc.stdout.fileno()), os.dup(proc.stderr.fileno()), logs, cfg.log_cap_bytes, pumps)
    proc.stdout.close()
    proc.stderr.close()
    deadline = t_spawn + timeout_s
    outcome, exit_code, kill = None, None, None
    try:
        init_pid = _info_child_pid(info_r, time.monotonic() + 30.0)  # closed in `finally`
        ns = procs.pid_namespace(init_pid) if init_pid else None
        if ns == procs.pid_namespace(os.getpid()):
            ns = None  # read too late (pid reused): the cell's namespace is already gone
        cell = procs.NamespaceCell(init_pid or -1, ns)
        log(f"isolated: bwrap {proc.pid}, namespace init {init_pid}, {ns}")
        while outcome is None:
            try:
                exit_code = proc.wait(timeout=max(0.0, min(0.25, deadline - time.monotonic())))
                outcome = "exited"
                break
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() >= deadline:
                outcome = "timeout"
            elif cfg.stop.is_set():
                outcome = "interrupted"
        if outcome == "exited":
            # bwrap's init has exited, so the kernel has emptied the namespace; checked anyway.
            if cell.members():
                kill = cell.kill_all("exited", 0.0)
        elif outcome == "timeout":
            kill = cell.kill_all("limit", cfg.kill_grace_s, started=deadline)
        else:
            kill = cell.kill_all("interrupt", cfg.kill_grace_s)
    finally:
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - bwrap exits once its init is gone
            proc.kill()
            code = proc.wait()
        if outcome == "exited":
            exit_code = code
        procs.unregister_active(proc.pid)
        os.close(info_r)
    return outcome, exit_code, kill, t_spawn, None


def _run_shepherd(cfg, sb, env, wrapper, start_w, timeout_s, log, pumps, logs, marker):
    """The cell without isolation (--no-isolation): the shepherd and /proc scans of procs.py."""
    status_r, status_w = os.pipe()
    t_spawn = time.monotonic()
    try:
        with procs.SPAWN_LOCK:
            try:
                shep = subprocess.Popen(
                    [sys.executable or "python3", "-I", "-c", SHEPHERD_SOURCE, str(status_w), *wrapper],
                    cwd=sb.path, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
                    pass_fds=(status_w, start_w))
            except OSError as exc:
                os.close(status_r)
                return "not_started", None, None, t_spawn, f"could not start the agent command: {exc}"
            procs.register_active(shep.pid)
    finally:
        os.close(status_w)
        os.close(start_w)
    _start_pumps(os.dup(shep.stdout.fileno()), os.dup(shep.stderr.fileno()), logs, cfg.log_cap_bytes, pumps)
    shep.stdout.close()
    shep.stderr.close()
    deadline = t_spawn + timeout_s
    status = _ShepherdStatus(status_r)
    outcome, exit_code, kill = None, None, None
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
        return outcome, None, None, t_spawn, "the agent was not started (its shepherd process failed; see logs)"
    return outcome, exit_code, kill, t_spawn, None


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
        games = [g.strip() for g in a.games.split(",") if g.strip()] if a.games else None
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
        if "{prompt}" not in a.agent_cmd:
            _err("warning: --agent-cmd has no {prompt}: the agent will not be given the turn-1 prompt")
    except TemplateError as exc:
        _err(f"warning: {exc}: every cell will be recorded as harness_error (missing)")
    if not cells:
        _err(f"no cases to run in {tasks_root} (games: {games or 'all'}); nothing done")
        return 0
    if not a.force:
        from video_arena.scoring.condition_fields import finished_cell_conflict
        this_run = {"protocol": "B", "model": cfg.model, "max_turns": cfg.max_turns, "timeout_min": cfg.timeout_min,
                    "agent_cmd": redact(cfg.agent_cmd), "isolation": isolation.record(),
                    "reasoning_effort": cfg.reasoning_effort}
        conflict = finished_cell_conflict(out, cells, this_run, ("model", "reasoning_effort"), is_finished)
        if conflict:
            _err(f"error: {conflict}")
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
    bar = progress_bar(len(todo), "run-b", "cell", enabled=not a.no_progress)
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
                    bar.write(f"video-arena run-b: {g}/{c}: runner error {exc!r} (no run.json: the cell is missing)",
                              file=sys.stderr)
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
