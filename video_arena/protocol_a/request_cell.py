"""One Protocol A cell, start to finish: stills -> prompt -> one request -> answer + records.

Shared by the native runner (stills sampled on the host, cached) and the Harbor agent (stills
sampled inside the offline container, copied out); only `frames_for` differs.  Writes into
`out_dir`:

    answer.json    the extracted answer; {"events": []} when the reply holds none (no_answer)
    run.json       the run record (docs/PROTOCOLS.md lists every key)
    prompt.txt     the text part of the request, byte for byte
    reply.txt      the visible reply, byte for byte (reasoning.txt: a reasoning channel, if any)
    receipt.json   media receipt: media digest, grid, video_ts, every still's SHA-256 and size,
                   jpeg_q, fallbacks, request and condition digests

A call that never got a reply writes run.json with stop_reason "harness_error" and no answer.json:
the cell is missing, never 0.0.  Files a previous run of the cell left are removed first, so a run
that dies early can never be scored on its predecessor's answer: they move to attempts/<n>/ (the
attempt history, docs/PROTOCOLS.md "Attempts"), nothing is deleted.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone
from os import PathLike
from pathlib import Path
from typing import Any, Callable

import openai

from video_arena.digests import sha256_file

from video_arena.core import answer_candidates, extract_answer, protocol_a_prompt, text_digest
from video_arena import safe_io
from video_arena.core import results as R
from video_arena.core.instruction import instruction_for
from video_arena.core.tasks import ANSWER_ROOT_KEY
from video_arena.media import grid as G
from video_arena.core.condition import Condition, retry_scale
from video_arena.core.request import RequestOptions
from video_arena.protocol_a.engine import HarnessError, run_request, safe_text
from video_arena.toolkit_info import toolkit_provenance

CELL_FILES = (R.ANSWER_FILE, R.RUN_FILE, R.PROMPT_FILE, R.REPLY_FILE, R.RECEIPT_FILE, R.REASONING_FILE)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def sampling_of(spec: G.GridSpec) -> dict[str, Any]:
    return {"fps": spec.fps, "jpeg_q": spec.jpeg_q, "max_frames": spec.max_frames,
            "longest_side": spec.longest_side}


def execute_cell(*, cond: Condition, opts: RequestOptions, client: openai.OpenAI, game: str | None,
                 case_id: str | None, instruction_path: str | PathLike, frames_for: G.FrameSet | Any,
                 out_dir: str | PathLike, runner: str, jpeg_q: int | None = None,
                 max_frames: int | None = None, log: Callable[[str], None] = lambda s: None,
                 extra_record: dict[str, Any] | None = None, on_overflow: str = "stop",
                 game_version: int | None = None) -> R.RunRecord:
    """Run one cell; return its run record (also written to out_dir/run.json).  `game_version`: the version of
    the game's definition the case was made under (recorded as run.json's `game_version`)."""
    out = Path(out_dir)
    attempt = R.start_attempt(out, CELL_FILES)  # an earlier run's files move to attempts/<n>/, never deleted
    started, t0 = _now(), time.monotonic()
    base = cond.grid()
    spec = cond.grid(jpeg_q=jpeg_q, max_frames=max_frames)
    degradations: list[dict[str, Any]] = []
    if spec.jpeg_q != base.jpeg_q:
        degradations.append({"kind": "jpeg_q", "from": base.jpeg_q, "to": spec.jpeg_q, "why": "set by the operator"})
    if spec.max_frames != base.max_frames:
        degradations.append({"kind": "max_frames", "from": base.max_frames, "to": spec.max_frames,
                             "why": "set by the operator"})

    run = R.RunRecord(protocol="A", model=opts.model, game=game, case_id=case_id, game_version=game_version,
                      started_at=started)
    rec = R.ProtocolARecord(
        runner=runner, condition=cond.name, condition_sha256=cond.sha256, tolerance_s=cond.tolerance_s,
        transport=cond.transport, request_timeout_s=cond.request_timeout_s, reasoning_effort=opts.reasoning_effort,
        enable_thinking=opts.enable_thinking, request_params=opts.record(), on_overflow=on_overflow,
        toolkit=toolkit_provenance(), **attempt.record_keys())
    if retry_scale() != 1.0:
        rec.retry_scale = retry_scale()

    def record() -> R.RunRecord:
        return R.RunRecord.build({**run.to_doc(), **rec.to_doc(), **(extra_record or {})})

    try:
        run.instruction_sha256 = text_digest(instruction_for("video", instruction_path))

        def prompt_for(frames: G.FrameSet) -> str:
            return protocol_a_prompt(instruction_path, frames.plan.ts_floats())

        oc = run_request(client, cond, opts, prompt_for, frames_for, spec, degradations, log=log,
                         on_overflow=on_overflow)
    except (HarnessError, G.GridError, OSError, ValueError) as exc:
        run.stop_reason, run.answer_state = getattr(exc, "stop_reason", "harness_error"), None
        rec.error = safe_text(f"{type(exc).__name__}: {exc}")[0]
        rec.attempts = getattr(exc, "attempts", [])
        rec.degradations = getattr(exc, "degradations", degradations)
        rec.protocol_complete = False
        run.n_rows, run.wall_s, run.finished_at = None, round(time.monotonic() - t0, 3), _now()
        return R.write_run(out, record())

    frames, plan = oc.frames, oc.frames.plan
    prompt = protocol_a_prompt(instruction_path, plan.ts_floats())
    (out / R.PROMPT_FILE).write_text(prompt, encoding="utf-8")
    (out / R.REPLY_FILE).write_text(oc.reply, encoding="utf-8")
    if oc.reasoning:
        (out / R.REASONING_FILE).write_text(oc.reasoning, encoding="utf-8")

    answer = extract_answer(oc.reply)
    n_blocks = len(answer_candidates(oc.reply))
    if answer is None:
        answer_doc: dict[str, Any] = {ANSWER_ROOT_KEY: []}
        state = "no_answer"
    else:
        answer_doc, state = answer, "answered"
    if not oc.visible:
        stop = "empty"
    else:
        stop = oc.finish_reason or "unknown"
    fps_eff = float(plan.fps_eff)
    run.stop_reason, run.answer_state, run.n_rows = stop, state, len(answer_doc[ANSWER_ROOT_KEY])
    rec.finish_reason, rec.n_json_blocks, rec.frames_used, rec.fps_eff = oc.finish_reason, n_blocks, plan.n, fps_eff
    rec.t1_recall_ceiling = G.recall_ceiling(plan.fps_eff, cond.tolerance_s)
    rec.duration_s = float(frames.media.duration)
    rec.served_model = oc.served_model
    rec.usage, rec.request_sha256, rec.body_bytes = oc.usage, oc.request_sha256, oc.body_bytes
    rec.protocol_complete, rec.degraded = not oc.hit_max_tokens, bool(oc.degradations)
    rec.degradations, rec.sampling = oc.degradations, sampling_of(oc.spec)
    rec.attempts, rec.n_attempts = oc.attempts, len(oc.attempts)
    run.wall_s, run.finished_at = round(time.monotonic() - t0, 3), _now()
    if oc.lone_surrogates:
        rec.reply_lone_surrogates_replaced = oc.lone_surrogates
    receipt = {
        "format": R.RECEIPT_FORMAT, "game": game, "case_id": case_id, "runner": runner,
        **frames.receipt(), "sampling": sampling_of(oc.spec), "transport": cond.transport,
        "mp4_sha256": oc.mp4_sha256, "fallbacks": oc.degradations,
        "request_sha256": oc.request_sha256, "condition_sha256": cond.sha256,
    }
    safe_io.write_json_atomic(out / R.RECEIPT_FILE, receipt)
    answer_path = R.write_answer(out, answer_doc)
    # The scorer checks the answer it judges against this digest (a Harbor trial's collected artifact
    # is the same file, uploaded).  A no_answer cell is scored 0.0 by its state, whatever the bytes.
    run.answer_sha256 = sha256_file(answer_path) if run.answer_state == "answered" else None
    return R.write_run(out, record())
