"""Harbor's job and trial folders as the toolkit reads them (the pinned release, version.HARBOR_VERSION:
docs/HARBOR.md, "Scoring a Harbor job").  Standard library only: the readers (scoring, explore, oracle-check, publish) import it
without importing Harbor.

    <job>/config.json                     the job (JobConfig: agents, n_attempts, multipliers)
    <job>/<trial>/result.json             the trial (TrialResult: task_name, config, agent_info,
                                          verifier_result.rewards, exception_info, step_results)
    <job>/<trial>/config.json             the trial's config (an unfinished trial has only this)
    <job>/<trial>/verifier/judge.json     our verifier's record (harbor_templates/tests/score_harbor.py)
    <job>/<trial>/artifacts/app/answer.json   the collected /app/answer.json
    <job>/<trial>/agent/                  the agent's logs (a Protocol A trial's: a native cell folder;
                                          exit-code.txt from the oracle's solve.sh; trajectory.json, ATIF)

Trial folders are named `<task>__<suffix>` (`trial_task`).  Every document is read with the results
contract's bound (video_arena/safe_io.py), never through a symbolic link on any component below the
trial folder (a trial folder that is itself a link is no trial: `linked_entries` names it), and never
raises on what a folder holds.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from video_arena.core.results import ANSWER_FILE, RUN_FILE, RunRecord, read_run
from video_arena import safe_io
from video_arena.safe_io import read_bounded, read_json_object

#: Where Harbor puts the collected /app/answer.json (artifacts/<source path without "/">).
ANSWER_ARTIFACT = Path("artifacts") / "app" / ANSWER_FILE
TASK_PREFIX = "video-arena/"
#: Trial.error of a trial folder without result.json (Harbor writes it when the trial ends)
NO_RESULT = "no result.json (the trial did not finish)"


def _json_object(path: Path) -> dict[str, Any] | None:
    return read_json_object(path)[0]


def _in_trial(d: Path, *parts: str) -> Path | None:
    """d/parts when no component below the trial folder `d` is a symbolic link (None otherwise: a link in
    a trial is never followed, its target never read)."""
    path = Path(d, *parts)
    return None if safe_io.link_below(d, path) is not None else path


def _trial_json(d: Path, *parts: str) -> dict[str, Any] | None:
    path = _in_trial(d, *parts)
    return None if path is None else _json_object(path)


def _is_trial_dir(d: Path) -> bool:
    if os.path.lexists(d / "result.json"):  # whatever it is (a link, a FIFO): read_trial says it is unreadable
        return True
    cfg = _json_object(d / "config.json") if (d / "config.json").is_file() else None
    return bool(cfg) and isinstance(cfg.get("task"), dict)


def trial_dirs(job: Path) -> list[Path]:
    """A job's trial folders (a result.json, or a config.json naming a task: an unfinished trial): real
    folders only, never a link (linked_entries)."""
    return [d for d in safe_io.entries(Path(job))[0] if _is_trial_dir(d)]


def linked_entries(job: Path) -> list[Path]:
    """The entries of a job folder that are symbolic links (a reader refuses a job holding one: a link
    could lend it another job's trial)."""
    return safe_io.entries(Path(job))[1]


def finished_trials(job: Path) -> int:
    """Trials with a result.json (Harbor writes it when the trial ends): a progress count."""
    return sum(1 for _ in Path(job).glob("*/result.json"))


def is_harbor_job(path: str | os.PathLike) -> bool:
    """A folder with a job config.json and at least one trial folder (result.json, or a config.json
    naming a task)."""
    p = Path(path).expanduser()
    if not (p.is_dir() and (p / "config.json").is_file()):
        return False
    cfg = _json_object(p / "config.json")
    if cfg is None or isinstance(cfg.get("task"), dict):  # a trial's own config.json
        return False
    return bool(trial_dirs(p))


def is_one_trial(path: str | os.PathLike) -> bool:
    """A folder that is one Harbor trial (its result.json names the task), not a job."""
    p = Path(path)
    res = _json_object(p / "result.json") if (p / "result.json").is_file() else None
    return res is not None and "task_name" in res


def read_job_config(job: Path) -> dict[str, Any]:
    return _json_object(Path(job) / "config.json") or {}


@dataclass
class Trial:
    """One Harbor trial folder as read (the pinned release's layout): every reader of a trial takes this."""
    dir: Path
    result: dict[str, Any] | None
    config: dict[str, Any] | None
    error: str = ""                       # why result is None: no result.json, or unreadable
    task_key: str | None = None           # "<game>-<case_id>"
    task_key_source: str = ""
    judge_case: dict[str, Any] | None = None
    judge_error: str | None = None
    #: verifier/judge.json's answer_state (the dataset's verifier: was /app/answer.json the seed?)
    judge_answer_state: str | None = None
    protocol: str | None = None
    model: str | None = None
    #: (type, message) of result.json's exception_info, then of each step's
    exceptions: list[tuple[str, str]] = field(default_factory=list)
    #: agent/exit-code.txt (the oracle's solve.sh writes it when it fails)
    exit_code: str | None = None

    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def task_name(self) -> str:
        return str((self.result or {}).get("task_name"))

    @property
    def exception_info(self) -> dict[str, Any] | None:
        """result.json's exception_info as recorded (the trial's own; steps have theirs)."""
        info = (self.result or {}).get("exception_info")
        return info if isinstance(info, dict) else None

    @property
    def rewards(self) -> dict[str, Any] | None:
        """verifier_result.rewards as recorded (None when there is no verifier result)."""
        vr = (self.result or {}).get("verifier_result")
        rw = vr.get("rewards") if isinstance(vr, dict) else None
        return rw if isinstance(rw, dict) else None

    @property
    def agent_dir(self) -> Path:
        return self.dir / "agent"

    @property
    def answer_path(self) -> Path:
        return self.dir / ANSWER_ARTIFACT

    @property
    def result_path(self) -> Path:
        return self.dir / "result.json"

    def harbor_logs(self) -> list[Path]:
        """Harbor's own logs of the trial that are there: the verifier's stdout, the exception text (regular
        files reached through no link)."""
        return [p for p in (self.dir / "verifier" / "test-stdout.txt", self.dir / "exception.txt")
                if safe_io.regular_file(self.dir, p) is not None]

    def agent_run_path(self, protocol: str | None) -> Path | None:
        """agent/run.json when it is the toolkit's record: only in a Protocol A task (the Protocol A agent
        writes it from the host). Any other agent has a shell in the container and /logs/agent is its to
        write: a run.json there could forge a clean audit, a turn count or an answer digest. `protocol` is
        the task's (verifier/judge.json, the dataset's case.json), never the file's own.  Through a link
        (a linked agent/ folder, a linked run.json) there is none."""
        path = self.agent_dir / RUN_FILE
        return path if protocol == "A" and safe_io.regular_file(self.dir, path) is not None else None

    def agent_run(self, protocol: str | None) -> tuple[RunRecord | None, str]:
        """The toolkit's agent run record of a `protocol` task (`agent_run_path`: a Protocol A trial's
        agent/ folder is a native cell); (None, '') when there is none."""
        if self.agent_run_path(protocol) is None:
            return None, ""
        return read_run(self.agent_dir)

    def trial_config(self) -> dict[str, Any]:
        """The trial's config as result.json records it (else config.json): agent, kwargs, multipliers."""
        cfg = (self.result or {}).get("config") or self.config or {}
        return cfg if isinstance(cfg, dict) else {}

    def agent_kwargs(self) -> dict[str, Any]:
        agent = self.trial_config().get("agent")
        kw = (agent.get("kwargs") or {}) if isinstance(agent, dict) else {}
        return kw if isinstance(kw, dict) else {}

    def agent_reasoning_effort(self) -> tuple[str | None, bool]:
        """(the agent's `--ak reasoning_effort`, whether the trial's config names one at all: a null or
        empty one states "none")."""
        kwargs = self.agent_kwargs()
        if "reasoning_effort" not in kwargs:
            return None, False
        value = kwargs["reasoning_effort"]
        return (None if value in (None, "") else str(value)), True


def _task_key(result: dict | None, config: dict | None) -> tuple[str | None, str]:
    name = (result or {}).get("task_name")
    if isinstance(name, str) and name:
        return (name[len(TASK_PREFIX):] if name.startswith(TASK_PREFIX) else name.rsplit("/", 1)[-1]), "task_name"
    for doc in (config, (result or {}).get("config")):
        task = (doc or {}).get("task")
        if isinstance(task, dict) and isinstance(task.get("path"), str) and task["path"]:
            return Path(task["path"]).name, "config task path"
    return None, ""


def _model_of(result: dict | None, config: dict | None) -> str | None:
    cfg = (result or {}).get("config") or config or {}
    agent = cfg.get("agent") if isinstance(cfg, dict) else None
    agent = agent if isinstance(agent, dict) else {}
    info = (result or {}).get("agent_info")
    info = info if isinstance(info, dict) else {}
    model = agent.get("model_name")
    if not model and isinstance(info.get("model_info"), dict):
        mi = info["model_info"]
        model = "/".join(x for x in (mi.get("provider"), mi.get("name")) if x) or None
    who = agent.get("name") or agent.get("import_path") or info.get("name")
    if model and who:
        return f"{who}:{model}"
    return model or who


def _protocol_of(trial: Trial) -> str | None:
    p = (trial.judge_case or {}).get("protocol")
    if p:
        return str(p)
    cfg = (trial.result or {}).get("config") or trial.config or {}
    task_path = ((cfg.get("task") or {}) if isinstance(cfg, dict) else {}).get("path")
    if isinstance(task_path, str):
        case = _json_object(Path(task_path) / "tests" / "case.json")  # the dataset, when still there
        if case and case.get("protocol"):
            return str(case["protocol"])
    return None


def read_trial(d: Path) -> Trial:
    """Everything the toolkit reads from one trial folder; never raises on what the folder holds."""
    d = Path(d)
    config = _trial_json(d, "config.json")
    result: dict[str, Any] | None = None
    error = ""
    if not os.path.lexists(d / "result.json"):
        error = NO_RESULT
    else:
        result = _json_object(d / "result.json")
        if result is None:
            error = "result.json unreadable or not a JSON object"
    t = Trial(dir=d, result=result, config=config, error=error)
    t.task_key, t.task_key_source = _task_key(result, config)
    jdoc = _trial_json(d, "verifier", "judge.json")
    if jdoc is not None:
        t.judge_case = jdoc.get("case") if isinstance(jdoc.get("case"), dict) else None
        t.judge_error = jdoc.get("error") or None
        state = jdoc.get("answer_state")
        t.judge_answer_state = state if isinstance(state, str) else None
    t.protocol = _protocol_of(t)
    t.model = _model_of(result, config)
    if result is not None:
        infos = [result.get("exception_info")]
        infos += [s.get("exception_info") for s in (result.get("step_results") or []) if isinstance(s, dict)]
        for info in infos:
            if isinstance(info, dict):
                t.exceptions.append((str(info.get("exception_type") or "Exception"),
                                     str(info.get("exception_message") or "")))
    code_file = _in_trial(d, "agent", "exit-code.txt")
    if code_file is not None and code_file.is_file():
        try:
            t.exit_code = read_bounded(code_file, 4096)[0][:4096].decode("utf-8", "replace").strip()
        except OSError:
            t.exit_code = "?"
    return t


def read_job(job: Path) -> list[Trial]:
    return [read_trial(d) for d in trial_dirs(job)]


def split_task_key(key: str, cases: dict[str, set[str]]) -> tuple[str, str] | None:
    """(game, case_id) of "<game>-<case_id>" against the tasks tree (the longest game name that fits
    and names one of its cases)."""
    for game in sorted(cases, key=len, reverse=True):
        if key.startswith(game + "-") and key[len(game) + 1:] in cases[game]:
            return game, key[len(game) + 1:]
    return None


def trial_task(name: str | None) -> str:
    """The task part of a trial folder's or session's name: Harbor names a trial `<task>__<suffix>`
    (a path-like name keeps its last part)."""
    return str(name or "").split("__")[0].rsplit("/", 1)[-1]


# --------------------------------------------------------------------------------------------------
# ATIF trajectories (agent/trajectory.json)
# --------------------------------------------------------------------------------------------------
def atif_lines(traj: dict[str, Any]) -> tuple[list[str], int, set[str]]:
    """An ATIF trajectory (Harbor's agent/trajectory.json) as transcript lines in the audit's
    convention (video_arena/core/audit.py): each agent step becomes one `{"role": "agent", ...}`
    line holding its message, reasoning and tool calls; every other step (user, system, the tool
    observations) is tool output and is not scanned.  Returns (lines, agent turns, reasoning efforts)."""
    lines, turns, efforts = [], 0, set()
    stack = [traj]
    while stack:
        t = stack.pop()
        for step in t.get("steps") or []:
            if not isinstance(step, dict) or step.get("source") != "agent":
                continue
            if not step.get("is_copied_context"):
                turns += 1
            if step.get("reasoning_effort") not in (None, ""):
                efforts.add(str(step["reasoning_effort"]))
            msg = step.get("message")
            if isinstance(msg, list):
                msg = "\n".join(str(p.get("text") or "") for p in msg if isinstance(p, dict))
            text = "\n".join(x for x in (str(msg or ""), str(step.get("reasoning_content") or "")) if x)
            calls = [{"function": {"name": str(c.get("function_name") or ""), "arguments": c.get("arguments") or {}}}
                     for c in step.get("tool_calls") or [] if isinstance(c, dict)]
            lines.append(json.dumps({"role": "agent", "text": text, "tool_calls": calls}))
        stack.extend(s for s in t.get("subagent_trajectories") or [] if isinstance(s, dict))
    return lines, turns, efforts
