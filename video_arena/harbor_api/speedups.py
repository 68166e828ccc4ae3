"""validate's two replacements of Harbor internals, used only with the Harbor release they were written
and tested against (version.HARBOR_VERSION, the one pyproject.toml pins).

* ComposeBatch: `harbor lint` runs `docker compose config` once per task (most of validate's time).
  This loads the compose files of many tasks in one run and hands each task's result to Harbor's lint
  rules unchanged, by standing in for `harbor.lint.compose._load_compose`.
* memoised_filters: Harbor builds a fresh TaskFileFilter for each of its loaders and asks each the
  same questions about the same few paths; while one task is checked this memoises
  `TaskFileFilter.is_excluded`, `.ignore_rules` and `TaskPaths.validate_input_tree`.

Both replace names Harbor does not promise to keep (a private function, methods and their keyword
arguments), so both are on only when `version.is_pinned_release()`.  With any other version, or none
that can be read, they do nothing and validate runs Harbor's own code path as it is: slower, the same
verdicts.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Iterator

import yaml
from harbor.lint import compose as HC
from harbor.models.task.file_filter import TaskFileFilter
from harbor.models.task.paths import TaskPaths

from video_arena.harbor_api import version

#: Compose files per `docker compose config` run.
COMPOSE_BATCH = 120


# -- compose files of many tasks in one `docker compose config` run --------------------------------

class ComposeBatch:
    """Loads the compose files of many tasks in one run (each task's `main` renamed `main_<n>` in one
    project; the caller passes only files whose one service gets the same inputs in a batch as alone)
    and, while installed(), answers Harbor's loader from that. A task not prefetched, or a batch that
    fails, goes through Harbor's loader as before. With another Harbor version: nothing is prefetched
    and nothing is replaced."""

    def __init__(self) -> None:
        self.cache: dict[str, str] = {}
        self.runs = 0
        self.active = version.is_pinned_release()

    def prefetch(self, todo: list[tuple[Path, dict]]) -> None:
        """todo: (a task's compose file, its `main` service as parsed)."""
        if not self.active or not todo:
            return
        for start in range(0, len(todo), COMPOSE_BATCH):
            chunk = todo[start:start + COMPOSE_BATCH]
            combined = {"services": {f"main_{i}": main for i, (_f, main) in enumerate(chunk)}}
            with tempfile.TemporaryDirectory(prefix="va-validate-compose-") as tmp:
                path = Path(tmp) / "docker-compose.yaml"
                path.write_text(yaml.safe_dump(combined, sort_keys=False), encoding="utf-8")
                try:
                    data = HC._load_compose(path)
                except Exception:  # Harbor's loader, one task at a time, says what is wrong
                    data = None
                self.runs += 1
            services = (data or {}).get("services") or {}
            if not isinstance(data, dict) or set(services) != {f"main_{i}" for i in range(len(chunk))}:
                continue
            rest = {k: v for k, v in data.items() if k != "services"}
            for i, (compose_file, _main) in enumerate(chunk):
                self.cache[str(Path(compose_file).absolute())] = json.dumps(
                    dict(rest, services={"main": services[f"main_{i}"]}))

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        if not self.active:
            yield
            return
        original = HC._load_compose

        def load(path, *, task_env=None):
            hit = None if task_env else self.cache.get(str(Path(path).absolute()))
            return json.loads(hit) if hit is not None else original(path, task_env=task_env)

        HC._load_compose = load
        try:
            yield
        finally:
            HC._load_compose = original


# -- Harbor's path filter, memoised while one task is checked --------------------------------------

class _FilterMemo:
    """Harbor builds a fresh TaskFileFilter for each of its loaders (Task(), Task.is_valid_dir, lint and
    its verifier resolutions) and asks each the same questions about the same few paths: is_excluded,
    ignore_rules and TaskPaths.validate_input_tree are pathlib-heavy and were about half of validate's
    time. While one task is checked (the folder does not change under it), this memoises them per
    (task folder, path): the same answers, computed once. A call that raises is never memoised (it
    raises again), and validate_input_tree is memoised only with no exclude or the task's own filter."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.memo: dict[tuple, object] = {}
        self.originals: dict[str, tuple[type, object]] = {}

    def _wrap(self, name: str, original, key_of):
        memo = self.memo

        def cached(obj, path, **kw):
            key = key_of(obj, path, kw)
            if key is None:
                return original(obj, path, **kw)
            key = (name,) + key
            try:
                return memo[key]
            except KeyError:
                value = original(obj, path, **kw)
                memo[key] = value
                return value

        cached.__wrapped__ = original
        return cached

    @staticmethod
    def _filter_key(filt, path, kw):
        return None if kw else (str(filt.task_dir), os.path.abspath(path))

    @staticmethod
    def _tree_key(task_paths, path, kw):
        exclude = kw.get("exclude")
        if set(kw) - {"exclude"}:
            return None
        if exclude is not None:
            owner = getattr(exclude, "__self__", None)
            if (not isinstance(owner, TaskFileFilter) or owner.task_dir != task_paths.task_dir
                    or getattr(exclude, "__func__", None) is not TaskFileFilter.__dict__["is_excluded"]):
                return None
        return (str(task_paths.task_dir), os.path.abspath(path), exclude is None)

    @contextlib.contextmanager
    def task(self, task_dir: Path) -> Iterator[None]:
        targets = {"is_excluded": (TaskFileFilter, self._filter_key),
                   "ignore_rules": (TaskFileFilter, self._filter_key),
                   "validate_input_tree": (TaskPaths, self._tree_key)}
        try:  # the key TaskFileFilter and TaskPaths use for this folder
            folder: str | None = str(Path(task_dir).resolve())
        except (OSError, RuntimeError):
            folder = None
        with self.lock:
            if self.users == 0:
                for name, (cls, key_of) in targets.items():
                    original = cls.__dict__[name]
                    self.originals[name] = (cls, original)
                    setattr(cls, name, self._wrap(name, original, key_of))
            self.users += 1
        try:
            yield
        finally:
            with self.lock:
                for key in [k for k in self.memo if k[1] == folder]:
                    del self.memo[key]
                self.users -= 1
                if self.users == 0:
                    for name, (cls, original) in self.originals.items():
                        setattr(cls, name, original)
                    self.originals.clear()
                    self.memo.clear()


_FILTER_MEMO = _FilterMemo()


def memoised_filters(task_dir: Path) -> contextlib.AbstractContextManager:
    """While one task is checked: Harbor's path filter memoised (HARBOR_VERSION), else Harbor's own code."""
    return _FILTER_MEMO.task(task_dir) if version.is_pinned_release() else contextlib.nullcontext()
