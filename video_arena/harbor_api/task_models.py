"""Harbor's task models and `harbor lint`, as make-harbor and validate use them.

    parse_task_toml(text)      TaskConfig from task.toml text (make-harbor checks what it renders)
    parse_task_config(raw)     TaskConfig from the parsed document (validate reads the model's fields)
    load_task(d), is_valid_task_dir(d)   the loader `harbor run` uses, and what `-p DATASET` keeps
    verifier_mode(cfg)         "separate" or "shared"
    lint_rules(...), lint(d, rules)   harbor lint's findings with the rules validate selects
    lint_environment(name, value)     lint interpolates compose files with os.environ: a variable set
                                      while it runs (thread-safe, undone after)

Importing this module imports Harbor's task models and lint (about 1.2 s of CPU on the development
machine, `python -X importtime -c "import harbor.lint"`): only make-harbor and validate import it.
"""
from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from harbor.lint import lint_task
from harbor.lint.models import COMPOSE_RULES, DEFAULT_RULES, LintRule
from harbor.models.task.config import TaskConfig
from harbor.models.task.task import Task
from harbor.models.task.verifier_mode import resolve_task_verifier_mode

__all__ = ["LintFinding", "LintRule", "Task", "TaskConfig", "is_valid_task_dir", "lint", "lint_environment",
           "lint_rules", "load_task", "parse_task_config", "parse_task_toml", "verifier_mode"]


def parse_task_toml(text: str) -> TaskConfig:
    """Harbor's TaskConfig of a task.toml text (raises Harbor's validation error)."""
    return TaskConfig.model_validate_toml(text)


def parse_task_config(raw: dict) -> TaskConfig:
    """Harbor's TaskConfig of a parsed task.toml (raises Harbor's validation error)."""
    return TaskConfig.model_validate(raw)


def load_task(task_dir: Path) -> Task:
    """The task as `harbor run` loads it (raises on a folder Harbor refuses)."""
    return Task(task_dir)


def is_valid_task_dir(task_dir: Path) -> bool:
    """What `harbor run -p DATASET` keeps: a folder for which this is False is skipped, silently."""
    return Task.is_valid_dir(task_dir)


def verifier_mode(cfg: TaskConfig) -> str:
    """Where the verifier runs: "separate" (its own container) or "shared" (the agent's)."""
    return resolve_task_verifier_mode(cfg).value


# -- harbor lint -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LintFinding:
    rule: str
    path: str | None
    message: str


def lint_rules(with_compose: bool, pinned: bool) -> set[LintRule]:
    """Harbor's default rules plus root-agent; without the Docker compose CLI its compose rules are
    left out (the two that read task.toml stay); `pinned`: also Harbor's unpinned-image rule."""
    rules = set(DEFAULT_RULES) | {LintRule.ROOT_AGENT}
    if not with_compose:
        rules -= set(COMPOSE_RULES) - {LintRule.INVALID_TASK_CONFIG, LintRule.INVALID_TASK_FILES}
    if pinned:
        rules.add(LintRule.UNPINNED_IMAGE)
    return rules


def lint(task_dir: Path, rules: set[LintRule]) -> list[LintFinding]:
    """`harbor lint` of one task folder with `rules` (Harbor's operational errors propagate)."""
    return [LintFinding(str(f.rule), f.path, f.message) for f in lint_task(task_dir, selected_rules=rules)]


#: The rule whose finding mount mode expects (the video's bind mount from outside the task).
COMPOSE_EXTERNAL_BIND_MOUNT = str(LintRule.COMPOSE_EXTERNAL_BIND_MOUNT)

_env_lock = threading.Lock()
_env_users: dict[str, int] = {}
_env_set_by_us: set[str] = set()


@contextlib.contextmanager
def lint_environment(name: str, value: str) -> Iterator[None]:
    """Harbor's lint interpolates compose files with the process's os.environ, so a variable they
    require (`${NAME:?...}`) must be set while it runs: if the user has not set `name`, `value` stands
    in while any caller is inside (thread-safe), and it is removed after."""
    with _env_lock:
        if _env_users.get(name, 0) == 0 and name not in os.environ:
            os.environ[name] = value
            _env_set_by_us.add(name)
        _env_users[name] = _env_users.get(name, 0) + 1
    try:
        yield
    finally:
        with _env_lock:
            _env_users[name] -= 1
            if _env_users[name] == 0 and name in _env_set_by_us:
                os.environ.pop(name, None)
                _env_set_by_us.discard(name)
