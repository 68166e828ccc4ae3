"""Provenance of a Protocol A answer (docs/PROTOCOLS.md, "Provenance").

Each cell records `request_sha256`: the SHA-256 of its request with every still replaced by the
still's own SHA-256 (engine.reference_body).  `verify_cell` rebuilds that request from

  * the condition file, found by the recorded `condition_sha256` among the versioned conditions
    (video_arena/core/conditions/) or the copy the runner keeps in <out>/_conditions/ (a Harbor
    trial's: agent/_conditions/),
  * the case: the game's instruction in the tasks tree, rendered for Protocol A,
  * the receipt: the video_ts and the still digests,
  * the request options the run record holds (model, max_tokens, reasoning effort, extra body),

and refuses the cell (ok=False, reason) when anything disagrees: the rebuilt hash, the instruction
digest, the grid timestamps, the prompt text, the answer (which must be what the extractor takes
from the recorded reply), or the media: the receipt's media SHA-256 must be the one the game's
manifest.json records for the case.  The scorer calls it for every Protocol A cell unless
`score --no-verify-requests`.  A cell folder is untrusted: every file is read with a bound, never through
a symbolic link, and the condition copies through one `ConditionFiles` per run (each read once).
"""
from __future__ import annotations

import os
from os import PathLike
from pathlib import Path
from typing import Any

from video_arena.core import extract_answer, protocol_a_prompt, resolve, text_digest
from video_arena import safe_io
from video_arena.core import results as R
from video_arena.core.instruction import instruction_for
from video_arena.core.condition import CONDITIONS_SUBDIR, ConditionFiles
from video_arena.core.request import RequestOptions, reference_body, request_sha256
from video_arena.core.tasks import ANSWER_ROOT_KEY, TasksTree, TasksTreeError
from video_arena.media import grid as G

__all__ = ["rebuild_request_sha256", "verify_cell"]


def _load(path: Path) -> dict[str, Any]:
    """A JSON object the cell holds (receipt, answer, manifest), read with the results contract's bound;
    ValueError when it is not one."""
    doc, err = safe_io.read_json_object(path)
    if doc is None:
        raise ValueError(f"{path.name} {err}")
    return doc


def _text(path: Path) -> str:
    """A text file the cell holds (reply, prompt), read with the results contract's bound, never through
    a link; OSError when it is absent, not a regular file or larger than the bound."""
    data, size = safe_io.read_bounded(path, safe_io.MAX_RECORD_BYTES)
    if size > safe_io.MAX_RECORD_BYTES:
        raise OSError(f"{path.name} is larger than {safe_io.MAX_RECORD_BYTES} bytes ({size})")
    return data.decode("utf-8")


def _run(cell: Path) -> R.RunRecord:
    """The cell's run record, typed (core/results.py read_run); ValueError when it cannot be read."""
    rec, err = R.read_run(cell)
    if rec is None:
        raise ValueError(err)
    return rec


def _game_case(run: R.RunRecord) -> tuple[str, str]:
    """The game and case the record names; KeyError when it names none (or not as text)."""
    if run.game is None or run.case_id is None:
        raise KeyError("game" if run.game is None else "case_id")
    return run.game, run.case_id


def rebuild_request_sha256(cell_dir: str | PathLike, tasks_root: str | PathLike | None = None,
                           instruction_path: str | PathLike | None = None,
                           conditions: ConditionFiles | None = None) -> tuple[str, dict[str, Any]]:
    """(rebuilt request hash, details) for a cell; raises ValueError when it cannot be rebuilt.
    `conditions`: the run's condition files (a reader scoring many cells passes one, so each copy is
    read once)."""
    cell = Path(cell_dir)
    run, receipt = _run(cell), _load(cell / R.RECEIPT_FILE)
    a = run.protocol_a
    # run-a keeps its condition in <out>/_conditions/, the Harbor agent in the trial's agent/_conditions/
    cond, why = (conditions or ConditionFiles()).find(
        R.or_none(a.condition_sha256), [cell.parent.parent / CONDITIONS_SUBDIR, cell / CONDITIONS_SUBDIR])
    if cond is None:
        raise ValueError(why)
    if instruction_path is None:
        instruction_path = resolve(*_game_case(run), tasks_root)["instruction"]
    ts = receipt["video_ts"]
    prompt = protocol_a_prompt(instruction_path, ts)
    shas = [f["sha256"] for f in receipt["frames"]]
    if not a.recorded(a.request_params):
        raise KeyError("request_params")
    body = reference_body(cond, RequestOptions.from_record(a.request_params), prompt, shas)
    return request_sha256(body), {"condition": cond, "prompt": prompt, "instruction_path": instruction_path}


def verify_cell(cell_dir: str | PathLike, tasks_root: str | PathLike | None = None,
                conditions: ConditionFiles | None = None) -> tuple[bool, str]:
    """Check one Protocol A cell folder against the condition file and the case; (ok, reason)."""
    cell = Path(cell_dir)
    try:
        run = _run(cell)
    except ValueError as exc:
        return False, f"no readable run.json: {exc}"
    if run.protocol != "A":
        return False, f"not a Protocol A cell (protocol {run.as_read().get('protocol')!r})"
    if run.stop_reason == R.HARNESS_ERROR:
        return False, "harness_error: the call never got a reply (missing, not scored)"
    problems: list[str] = []
    try:
        receipt = _load(cell / R.RECEIPT_FILE)
        rebuilt, det = rebuild_request_sha256(cell, tasks_root, conditions=conditions)
    except (OSError, KeyError, ValueError, LookupError, TypeError, OverflowError) as exc:
        return False, f"cannot rebuild the request: {type(exc).__name__}: {exc}"
    cond = det["condition"]
    a = run.protocol_a
    recorded_request = R.or_none(a.request_sha256)
    if rebuilt != recorded_request:
        problems.append(f"request hash mismatch: recorded {str(recorded_request)[:12]}, "
                        f"rebuilt {rebuilt[:12]}")
    if receipt.get("request_sha256") != recorded_request:
        problems.append("receipt and run record carry different request hashes")
    delivered = text_digest(instruction_for("video", det["instruction_path"]))
    if run.instruction_sha256 != delivered:
        problems.append("instruction digest differs from the case's instruction rendered for Protocol A")
    # the grid: the recorded timestamps must be the condition's grid for this duration
    try:
        if not a.recorded(a.sampling):
            raise KeyError("sampling")
        s = a.sampling
        base = cond.grid()
        if s["longest_side"] != base.longest_side or s["jpeg_q"] < base.jpeg_q or s["max_frames"] > base.max_frames:
            problems.append(f"sampling {s} is not the condition's grid or a recorded degradation of it")
        degraded_keys = {d.get("kind") for d in ([] if a.degradations is R.UNSET else a.degradations)}
        if s["jpeg_q"] != base.jpeg_q and "jpeg_q" not in degraded_keys:
            problems.append("jpeg_q differs from the condition but no degradation is recorded")
        if s["max_frames"] != base.max_frames and "max_frames" not in degraded_keys:
            problems.append("max_frames differs from the condition but no degradation is recorded")
        spec = cond.grid(jpeg_q=s["jpeg_q"], max_frames=s["max_frames"])
        duration = str(receipt["media"]["duration_s"])
        ts = receipt["video_ts"]
        # the grid is built only when it has as many stills as the receipt lists (a file of bounded size):
        # a recorded max_frames of 10**9 never makes a billion timestamps
        if G.grid_count(duration, spec) != len(ts) or any(
                abs(a - float(b)) > 1e-6 for a, b in zip(ts, G.grid_times(duration, spec)[0])):
            problems.append("video_ts is not the condition's grid for the recorded duration")
        if len(receipt["frames"]) != len(ts) or R.or_none(a.frames_used) != len(ts):
            problems.append("frame count differs between receipt, video_ts and run record")
    except (KeyError, TypeError, ValueError, ArithmeticError, G.GridError) as exc:
        problems.append(f"malformed sampling record: {exc!r}")
    try:
        if os.path.lexists(cell / R.PROMPT_FILE) and _text(cell / R.PROMPT_FILE) != det["prompt"]:
            problems.append("prompt.txt differs from the rebuilt prompt")
    except (OSError, ValueError) as exc:
        problems.append(f"prompt.txt not readable: {exc}")
    # the answer must be the one the extractor takes from the recorded reply
    try:
        reply = _text(cell / R.REPLY_FILE)
        expected = extract_answer(reply) or {ANSWER_ROOT_KEY: []}
        answer = _load(cell / R.ANSWER_FILE)
        if answer != expected:
            problems.append("answer.json is not the answer extracted from reply.txt")
        if run.answer_state != ("answered" if extract_answer(reply) is not None else "no_answer"):
            problems.append("answer_state disagrees with reply.txt")
    except (OSError, ValueError) as exc:
        problems.append(f"answer/reply not readable: {exc}")
    media_sha = _case_media_sha(run, tasks_root)
    got = (receipt.get("media") or {}).get("sha256") if isinstance(receipt.get("media"), dict) else None
    if media_sha and got != media_sha:
        problems.append(f"the stills were sampled from other media than the case's (media sha256 "
                        f"{str(got)[:12]}, the manifest says {media_sha[:12]})")
    return (not problems), ("ok" if not problems else "; ".join(problems))


def _case_media_sha(run: R.RunRecord, tasks_root) -> str | None:
    """The case's media SHA-256 as the tasks tree records it: `tasks/<game>/manifest.json`
    (cases[].media_sha256, written by build-cases), else a digest in its cases.json entry."""
    try:
        game, case_id = _game_case(run)
        r = resolve(game, case_id, tasks_root)
    except (LookupError, OSError, ValueError, TypeError):
        return None
    try:
        entry = TasksTree(r["tasks_root"]).manifest_cases(game).get(case_id, {})
    except TasksTreeError:
        entry = {}
    if isinstance(entry.get("media_sha256"), str):
        return entry["media_sha256"]
    case = r["case"]
    for key in ("media_sha256", "sha256"):
        if isinstance(case.get(key), str):
            return case[key]
    media = case.get("media")
    if isinstance(media, dict) and isinstance(media.get("sha256"), str):
        return media["sha256"]
    return None
