"""Find the answer object in a model's reply (seed 000, "Answer extraction").

Every top-level JSON object in the reply, fenced or bare, that carries the answer root key with a
list is a candidate.  The one with the most rows wins; ties go to the one appearing last.  The
number of candidates is reported (`n_json_blocks`) so a run record shows when this mattered.
"""
from __future__ import annotations

import json
from typing import Any

from video_arena.core.tasks import ANSWER_ROOT_KEY

_DECODER = json.JSONDecoder()


def _top_level_objects(text: str):
    """Yield (offset, object) for each outermost JSON object that decodes, left to right."""
    i, n = 0, len(text)
    while True:
        i = text.find("{", i)
        if i < 0 or i >= n:
            return
        try:
            obj, end = _DECODER.raw_decode(text, i)
        except (ValueError, RecursionError):
            i += 1
            continue
        if isinstance(obj, dict):
            yield i, obj
        i = end


def answer_candidates(reply: str, root_key: str = ANSWER_ROOT_KEY) -> list[dict[str, Any]]:
    """Every answer-shaped JSON object in the reply, in order of appearance."""
    if not isinstance(reply, str):
        return []
    return [obj for _, obj in _top_level_objects(reply)
            if isinstance(obj.get(root_key), list)]


def extract_answer(reply: str, root_key: str = ANSWER_ROOT_KEY) -> dict[str, Any] | None:
    """The candidate with the most rows (ties: the last one), or None when the reply holds none."""
    best: dict[str, Any] | None = None
    for obj in answer_candidates(reply, root_key):
        if best is None or len(obj[root_key]) >= len(best[root_key]):
            best = obj
    return best
