"""Find the answer object in a model's reply (docs/PROTOCOLS.md, "The request": answer extraction).

Every top-level JSON object in the reply, fenced or bare, that carries the answer root key with a
list is a candidate.  The one with the most rows wins; ties go to the one appearing last.  The
number of candidates is reported (`n_json_blocks`) so a run record shows when this mattered.

"Top-level JSON objects" are found by one left-to-right scan, in time linear in the reply (a reply
is model output: a 4 MB reply of nested braces must not stall a run):

* At each `{` that can open an object (`{` then optional whitespace then `"` or `}`), the JSON
  decoder parses forward.  If the object completes, it is taken whole and the scan continues after
  it (objects inside it are part of it).
* If the parse fails at some position, the objects that completed inside the failed one before
  that position (outermost first, in order; e.g. a complete `{"events": [...]}` inside a wrapper
  cut off by the token limit) are taken, and the scan continues at the failure position - or, when
  the failed object's last string ended in `{` (an unterminated string that ran up to the next
  block's first key), at that `{`.  Any other `{` inside a string of the failed object does not
  start a new object.
* Nesting deeper than the decoder's depth limit (about 1,500 levels) is not followed: the scan
  takes the objects completed so far and continues further in.

The decoder parses a window of the reply that doubles until the outcome cannot depend on what
follows, so a failure costs time proportional to the text it read, never to the reply's length.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterator

from video_arena.core.tasks import ANSWER_ROOT_KEY

#: a `{` that can open a JSON object: an empty object or a key (JSON whitespace in between)
_OBJECT_START = re.compile(r'\{[ \t\n\r]*["}]')
#: first window (characters); smaller than the decoder's depth limit, so it never overflows it
_MIN_WINDOW = 64
#: a failure this close to a window's end may be the window's cut (a literal, number or \\u escape
#: cut short), not the reply's
_CUT_MARGIN = 16


class _Completed:
    """object_hook that keeps, in order, the completed objects not (yet) inside another one."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def __call__(self, obj: dict[str, Any]) -> dict[str, Any]:
        # The decoder completes inner objects before outer ones (post-order): the objects completed
        # inside `obj` are the last entries; count them by walking obj's values through lists.
        inner, stack = 0, list(obj.values())
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                inner += 1
            elif isinstance(v, list):
                stack.extend(v)
        if inner:
            del self.items[-inner:]
        self.items.append(obj)
        return obj


_WS = " \t\n\r"


def _restart_after_failure(text: str, i: int, f: int) -> int:
    """Where the scan resumes after the object at i failed at f: f, unless the failed object's last
    string ended in `{` (`... "x {" <f>`): then at that `{`.  This is how a block after an
    unterminated string is still found: the unterminated string runs up to the block's first key
    (`{"events"`), and the failed object stops right after it."""
    k = f
    while k > i and text[k - 1] in _WS:
        k -= 1
    if k > i and text[k - 1] == '"':
        k -= 1
        while k > i and text[k - 1] in _WS:
            k -= 1
        if k - 1 > i and text[k - 1] == "{":
            return k - 1
    return max(f, i + 1)


def _top_level_objects(text: str) -> Iterator[dict[str, Any]]:
    """Each top-level JSON object of `text`, left to right (see the module docstring)."""
    plain = json.JSONDecoder()
    completed = _Completed()
    hooked = json.JSONDecoder(object_hook=completed)

    def completed_before(chunk: str, stop: int) -> list[dict[str, Any]]:
        """The outermost objects that complete in chunk[:stop] (decoded again, with the hook)."""
        if chunk.find("}", 1, stop) < 0:  # no object can have completed
            return []
        completed.items = []
        try:
            hooked.raw_decode(chunk[:stop])
        except (ValueError, RecursionError):
            pass
        return completed.items

    n = len(text)
    pos = 0
    first_window = _MIN_WINDOW  # after a too-deep nest, the next start is likely inside it: begin wide
    while True:
        m = _OBJECT_START.search(text, pos)
        if m is None:
            return
        i = m.start()
        window, prev = first_window, ""
        first_window = _MIN_WINDOW
        while True:
            end = min(n, i + window)
            chunk = text[i:end]
            try:
                obj, used = plain.raw_decode(chunk)
            except json.JSONDecodeError as exc:
                if end < n and (exc.pos >= len(chunk) - _CUT_MARGIN or exc.msg.startswith("Unterminated string")):
                    prev, window = chunk, window * 2  # the outcome may depend on text past the window
                    continue
                yield from completed_before(chunk, exc.pos)
                pos = _restart_after_failure(text, i, i + exc.pos)
                break
            except RecursionError:  # deeper than the decoder's limit: continue further in
                if not prev and window > _MIN_WINDOW:  # the wide first window was too wide
                    window = _MIN_WINDOW
                    continue
                yield from completed_before(prev, len(prev))
                pos = i + max(len(prev), 1)
                first_window = max(_MIN_WINDOW, len(prev))
                break
            yield obj
            pos = i + used
            break


def answer_candidates(reply: str, root_key: str = ANSWER_ROOT_KEY) -> list[dict[str, Any]]:
    """Every answer-shaped JSON object in the reply, in order of appearance."""
    if not isinstance(reply, str):
        return []
    return [obj for obj in _top_level_objects(reply) if isinstance(obj.get(root_key), list)]


def extract_answer(reply: str, root_key: str = ANSWER_ROOT_KEY) -> dict[str, Any] | None:
    """The candidate with the most rows (ties: the last one), or None when the reply holds none."""
    best: dict[str, Any] | None = None
    for obj in answer_candidates(reply, root_key):
        if best is None or len(obj[root_key]) >= len(best[root_key]):
            best = obj
    return best
