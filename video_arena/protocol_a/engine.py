"""The Protocol A request engine: one OpenAI-compatible `/chat/completions` call per cell.

Seed 003's discipline, applied:

* The request is built once as a *reference body* in which every still is named by its own SHA-256
  (`sha256:<hex>`, or for the MP4 transport `mp4-of-frames:sha256:<h0>,<h1>,...`).  Its canonical
  JSON's SHA-256 is the request hash; the bytes sent are that body with each reference swapped for
  the data URL of the still (or of the MP4 built from them).  The scorer rebuilds the reference body
  from the condition file, the case and the receipt (provenance.verify_cell).
* Retries (at most `retry.max_retries`, one shared budget): rate limits (429), timeouts and dropped
  connections wait 1, 2, 4 s; server errors (5xx) wait 10, 20, 40 s.  A reply with no visible answer
  (no text, whether the host returned nothing or the guard cut off a reasoning-only reply) is redrawn
  inside the same budget.  Other 4xx errors are not retried.
* Degradations are recorded, never silent: a body over the declared cap (or an HTTP 413) raises
  `jpeg_q` step by step; a provider image-count cap below the grid (a 400 saying "maximum allowed:
  250") re-samples the grid with that many stills, spread uniformly over the whole match.
* A reply that hit `max_tokens` (finish_reason "length") makes the cell not protocol_complete.
"""
from __future__ import annotations

import base64
import json
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import openai

from video_arena.digests import sha256_bytes
from video_arena.protocol_a import grid as G
from video_arena.protocol_a.condition import Condition, canonical_json

IMAGE_REF = "sha256:"
MP4_REF = "mp4-of-frames:sha256:"
_IMAGE_CAP_RE = re.compile(r"(?:maximum|max)(?:imum)?\s*(?:allowed|number of images|images)?\s*(?:is|:)?\s*(\d+)",
                           re.I)


class HarnessError(RuntimeError):
    """The call never produced a reply: the cell is missing (stop_reason harness_error), not 0.0."""

    def __init__(self, message: str, attempts: list[dict[str, Any]] | None = None,
                 degradations: list[dict[str, Any]] | None = None):
        super().__init__(message)
        self.attempts = attempts or []
        self.degradations = degradations or []


@dataclass
class RequestOptions:
    """Everything a request depends on besides the condition, the prompt and the stills."""

    model: str
    max_tokens: int
    temperature: float | None = 0
    reasoning_effort: str | None = None
    enable_thinking: bool | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": self.max_tokens, "temperature": self.temperature,
                "reasoning_effort": self.reasoning_effort, "enable_thinking": self.enable_thinking,
                "extra_body": self.extra_body}

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> "RequestOptions":
        return cls(model=r["model"], max_tokens=int(r["max_tokens"]), temperature=r.get("temperature"),
                   reasoning_effort=r.get("reasoning_effort"), enable_thinking=r.get("enable_thinking"),
                   extra_body=dict(r.get("extra_body") or {}))


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def reference_body(cond: Condition, opts: RequestOptions, prompt: str,
                   frame_sha256: list[str]) -> dict[str, Any]:
    """The request with every still replaced by its SHA-256: what the request hash is taken over."""
    if cond.transport == "image_parts":
        media = []
        for h in frame_sha256:
            part: dict[str, Any] = {"url": IMAGE_REF + h}
            if cond.image_detail:
                part["detail"] = cond.image_detail
            media.append({"type": "image_url", "image_url": part})
    else:
        media = [{"type": "video_url", "video_url": {"url": MP4_REF + ",".join(frame_sha256)}}]
    text = [{"type": "text", "text": prompt}]
    content = text + media if cond.doc.get("prompt", {}).get("media_after_text", True) else media + text
    messages: list[dict[str, Any]] = []
    if cond.system_prompt:
        messages.append({"role": "system", "content": cond.system_prompt})
    messages.append({"role": "user", "content": content})
    body: dict[str, Any] = {"model": opts.model, "messages": messages, cond.max_tokens_param: opts.max_tokens}
    if opts.temperature is not None:
        body["temperature"] = opts.temperature
    if opts.reasoning_effort:
        body["reasoning_effort"] = opts.reasoning_effort
    extra = dict(opts.extra_body or {})
    if opts.enable_thinking is not None:
        extra = _deep_merge(extra, {"chat_template_kwargs": {"enable_thinking": bool(opts.enable_thinking)}})
    return _deep_merge(body, extra)


def request_sha256(body: dict[str, Any]) -> str:
    return sha256_bytes(canonical_json(body))


def materialize(body: dict[str, Any], resolve: Callable[[str], str]) -> dict[str, Any]:
    """A copy of a reference body with each media reference replaced by resolve(reference)."""
    out = json.loads(json.dumps(body))
    for msg in out["messages"]:
        if isinstance(msg.get("content"), list):
            for part in msg["content"]:
                for key in ("image_url", "video_url"):
                    if key in part and isinstance(part[key], dict):
                        part[key]["url"] = resolve(part[key]["url"])
    return out


def build_mp4(frames: G.FrameSet, work: Path) -> bytes:
    out = work / "frames.mp4"
    cmd = G.mp4_command(str(frames.frames_dir), frames.plan.n, str(out))
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise HarnessError(f"building the MP4 transport failed: {p.stderr.strip()[-1000:]}")
    return out.read_bytes()


def make_resolver(frames: G.FrameSet, transport: str, mp4_bytes: bytes | None = None) -> Callable[[str], str]:
    by_sha = {h: p for h, p in zip(frames.frame_sha256, frames.paths())}

    def resolve(ref: str) -> str:
        if ref.startswith(MP4_REF):
            assert mp4_bytes is not None
            return "data:video/mp4;base64," + base64.b64encode(mp4_bytes).decode("ascii")
        if ref.startswith(IMAGE_REF):
            data = by_sha[ref[len(IMAGE_REF):]].read_bytes()
            return "data:image/jpeg;base64," + base64.b64encode(data).decode("ascii")
        raise ValueError(f"unknown media reference {ref[:40]!r}")

    return resolve


@dataclass
class Outcome:
    reply: str
    finish_reason: str | None
    usage: dict[str, Any]
    attempts: list[dict[str, Any]]
    degradations: list[dict[str, Any]]
    frames: G.FrameSet
    spec: G.GridSpec
    request_sha256: str
    body_bytes: int
    mp4_sha256: str | None
    reasoning: str | None
    visible: bool
    hit_max_tokens: bool


def _usage(resp: Any) -> dict[str, Any]:
    u = getattr(resp, "usage", None)
    if u is None:
        return {}
    d = u.model_dump() if hasattr(u, "model_dump") else dict(u)
    out = {k: d.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    details = d.get("completion_tokens_details") or {}
    if isinstance(details, dict) and details.get("reasoning_tokens") is not None:
        out["reasoning_tokens"] = details["reasoning_tokens"]
    return out


def _classify(exc: Exception) -> tuple[str, int | None]:
    """('rate_limit'|'timeout'|'server'|'too_large'|'image_cap'|'fatal', status)."""
    if isinstance(exc, openai.APITimeoutError):
        return "timeout", None
    if isinstance(exc, openai.APIConnectionError):
        return "timeout", None
    if isinstance(exc, openai.APIStatusError):
        st = exc.status_code
        if st == 429:
            return "rate_limit", st
        if st == 408:
            return "timeout", st
        if st >= 500:
            return "server", st
        if st == 413:
            return "too_large", st
        msg = str(exc)
        if st == 400 and "image" in msg.lower() and _IMAGE_CAP_RE.search(msg):
            return "image_cap", st
        return "fatal", st
    return "fatal", None


FramesProvider = Callable[[G.GridSpec], G.FrameSet]


def run_request(client: openai.OpenAI, cond: Condition, opts: RequestOptions, prompt_for: Callable[[G.FrameSet], str],
                frames_for: FramesProvider, spec: G.GridSpec, degradations: list[dict[str, Any]] | None = None,
                sleep: Callable[[float], None] = time.sleep, log: Callable[[str], None] = lambda s: None) -> Outcome:
    """Make the cell's one request (with retries, redraws and recorded degradations)."""
    degradations = list(degradations or [])
    attempts: list[dict[str, Any]] = []
    frames = frames_for(spec)
    retries = 0
    last_error = "no attempt made"
    last_empty: dict[str, Any] | None = None

    with tempfile.TemporaryDirectory(prefix="va-a-") as tmp:
        while True:
            # -- build the body (and shrink it while it exceeds the declared cap) ----------------
            prompt = prompt_for(frames)
            ref = reference_body(cond, opts, prompt, frames.frame_sha256)
            mp4 = build_mp4(frames, Path(tmp)) if cond.transport == "mp4" else None
            body = materialize(ref, make_resolver(frames, cond.transport, mp4))
            body_bytes = len(json.dumps(body).encode("utf-8"))
            cap = cond.body_cap_bytes
            if cap and body_bytes > cap:
                spec, frames = _raise_jpeg_q(cond, spec, frames_for, degradations, attempts,
                                             f"body {body_bytes} B over the declared cap {cap} B")
                continue
            rsha = request_sha256(ref)

            # -- one draw --------------------------------------------------------------------------
            t0 = time.monotonic()
            att: dict[str, Any] = {"n": len(attempts) + 1, "jpeg_q": spec.jpeg_q, "frames": frames.plan.n}
            try:
                resp = client.chat.completions.create(
                    **{k: v for k, v in body.items() if k in ("model", "messages")},
                    extra_body={k: v for k, v in body.items() if k not in ("model", "messages")},
                    timeout=cond.request_timeout_s,
                )
            except Exception as exc:  # noqa: BLE001 - classified below
                kind, status = _classify(exc)
                att.update(wall_s=round(time.monotonic() - t0, 3), error=kind, status=status,
                           message=str(exc)[:500])
                attempts.append(att)
                last_error = f"{kind} ({status}): {str(exc)[:300]}"
                log(f"attempt {att['n']}: {last_error}")
                if kind == "too_large":
                    spec, frames = _raise_jpeg_q(cond, spec, frames_for, degradations, attempts,
                                                 f"HTTP 413 at {body_bytes} B")
                    continue
                if kind == "image_cap":
                    n_cap = int(_IMAGE_CAP_RE.search(str(exc)).group(1))
                    if 1 <= n_cap < frames.plan.n:
                        degradations.append({"kind": "max_frames", "from": frames.plan.n, "to": n_cap,
                                             "why": f"provider image cap: {str(exc)[:200]}"})
                        spec = G.GridSpec(fps=spec.fps, max_frames=n_cap, longest_side=spec.longest_side,
                                          jpeg_q=spec.jpeg_q)
                        frames = frames_for(spec)
                        continue
                    kind = "fatal"
                if kind == "fatal":
                    raise HarnessError(f"request failed without retry: {last_error}", attempts, degradations)
                if retries >= cond.max_retries:
                    raise HarnessError(f"no reply after {retries} retries: {last_error}", attempts, degradations)
                delay = cond.retry_delay(kind, retries)
                att["retry_after_s"] = delay
                retries += 1
                sleep(delay)
                continue

            choice = resp.choices[0] if getattr(resp, "choices", None) else None
            msg = getattr(choice, "message", None)
            content = (getattr(msg, "content", None) or "") if msg is not None else ""
            finish = getattr(choice, "finish_reason", None) if choice is not None else None
            extra = (getattr(msg, "model_extra", None) or {}) if msg is not None else {}
            reasoning = extra.get("reasoning_content") or extra.get("reasoning") or None
            usage = _usage(resp)
            visible = bool(content.strip())
            att.update(wall_s=round(time.monotonic() - t0, 3), finish_reason=finish,
                       reply_chars=len(content), visible=visible, usage=usage)
            attempts.append(att)
            outcome = Outcome(reply=content, finish_reason=finish, usage=usage, attempts=attempts,
                              degradations=degradations, frames=frames, spec=spec, request_sha256=rsha,
                              body_bytes=body_bytes, mp4_sha256=sha256_bytes(mp4) if mp4 else None,
                              reasoning=reasoning if isinstance(reasoning, str) else None, visible=visible,
                              hit_max_tokens=finish == "length")
            if visible or not cond.redraw_no_visible_answer:
                return outcome
            last_empty = outcome  # type: ignore[assignment]
            if retries >= cond.max_retries:
                log(f"attempt {att['n']}: no visible answer, redraw budget spent")
                return outcome
            att["redrawn"] = True
            retries += 1
            log(f"attempt {att['n']}: no visible answer (finish_reason {finish}); redrawing")
            continue
    raise AssertionError(last_empty)  # unreachable


def _raise_jpeg_q(cond: Condition, spec: G.GridSpec, frames_for: FramesProvider,
                  degradations: list[dict[str, Any]], attempts: list[dict[str, Any]], why: str):
    new_q = spec.jpeg_q + cond.jpeg_q_step
    if new_q > cond.jpeg_q_max:
        raise HarnessError(f"{why}, and jpeg_q {spec.jpeg_q} is already at the condition's maximum "
                           f"{cond.jpeg_q_max}", attempts, degradations)
    degradations.append({"kind": "jpeg_q", "from": spec.jpeg_q, "to": new_q, "why": why})
    spec = G.GridSpec(fps=spec.fps, max_frames=spec.max_frames, longest_side=spec.longest_side, jpeg_q=new_q)
    return spec, frames_for(spec)
