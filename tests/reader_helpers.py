"""Shared by the games' pixel-reader tests: a built-in case's video (the media root's when its bytes are the
manifest's, else rendered from the committed ground truth into a temporary folder) read by the game's reader."""
from __future__ import annotations

import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

from video_arena import paths
from video_arena.cases import build as B
from video_arena.core.tasks import TasksTree
from video_arena.games import pixel_reader as PX
from video_arena.games.readers import load_reader

TASKS = paths.default_tasks_root()


def shortest_case(game: str) -> str | None:
    """The case id of the game's shortest built-in video, None when the tree has no case of the game."""
    path = TASKS / game / "cases.json"
    if not path.is_file():
        return None
    cases = json.loads(path.read_text(encoding="utf-8"))["cases"]
    return min(cases, key=lambda c: (c["duration_s"], c["case_id"]))["case_id"] if cases else None


def case_video(game: str, case_id: str, tmp_path: Path) -> Path:
    tree = TasksTree(TASKS, os.environ.get("VA_MEDIA_ROOT") or TASKS)
    mp4 = tree.media(game, case_id)
    entry = next(e for e in json.loads(tree.manifest_path(game).read_text())["cases"] if e["case_id"] == case_id)
    if mp4.is_file() and B.sha256_file(mp4) == entry.get("media_sha256"):
        return mp4
    B.media_only_case(game, case_id, TASKS, tmp_path)
    return TasksTree(TASKS, tmp_path).media(game, case_id)


@lru_cache(maxsize=None)
def read_case(game: str, case_id: str) -> tuple[dict, list[dict], list[dict]]:
    """(the case's ground truth, the rows the reader wrote to answer.json, the visible states it returned); read once
    per test session."""
    reader = load_reader(game)
    gt = json.loads(TasksTree(TASKS).gt(game, case_id).read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        answer = Path(tmp) / "answer.json"
        writer = PX.Writer(answer)
        features = reader.read(case_video(game, case_id, Path(tmp)), writer, lambda msg: None)
        writer.flush()
        return gt, json.loads(answer.read_text(encoding="utf-8"))["events"], features
