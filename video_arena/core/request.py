"""The Protocol A request as a reference body: what the request hash is taken over (docs/PROTOCOLS.md,
"Provenance").

The request is built once as a *reference body* in which every still is named by its own SHA-256
(`sha256:<hex>`, or for the MP4 transport `mp4-of-frames:sha256:<h0>,<h1>,...`); its canonical JSON's
SHA-256 is the request hash (`request_sha256`).  The runner (video_arena/protocol_a/engine.py) sends
that body with each reference swapped for the data URL of the still (`materialize`); the scorer
rebuilds it from the condition file, the case and the receipt (provenance.py).  Both build it here.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Callable

from video_arena.core.condition import Condition, canonical_json
from video_arena.core.results import REASONING_EFFORT
from video_arena.digests import sha256_bytes

IMAGE_REF = "sha256:"
MP4_REF = "mp4-of-frames:sha256:"


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
        """The run record's `request_params`: every option under its field's name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> "RequestOptions":
        recorded = {f.name: r.get(f.name) for f in fields(cls)}
        return cls(**dict(recorded, model=r["model"], max_tokens=int(r["max_tokens"]),
                          extra_body=dict(r.get("extra_body") or {})))


#: request keys a condition (or its recorded options) fixes: --extra-body may not set them, or the run
#: record would misstate what was sent
CONDITION_KEYS = ("model", "messages", "max_tokens", "max_completion_tokens", "temperature", REASONING_EFFORT,
                  "enable_thinking")


def extra_body_collisions(extra: dict[str, Any]) -> list[str]:
    """The keys of an extra body that would change a condition field (dotted for nested ones)."""
    hits = [k for k in CONDITION_KEYS if k in extra]
    ctk = extra.get("chat_template_kwargs")
    if isinstance(ctk, dict) and "enable_thinking" in ctk:
        hits.append("chat_template_kwargs.enable_thinking")
    return hits


def check_extra_body(extra: dict[str, Any]) -> None:
    """Raise ValueError naming the condition fields an extra body would override."""
    hits = extra_body_collisions(extra)
    if hits:
        raise ValueError(
            f"--extra-body may not set {', '.join(hits)}: a condition field (what run.json records as sent). "
            f"Use --model, --max-tokens, --reasoning-effort, --enable-thinking, or another condition file "
            f"(temperature, the prompt)")


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
        body[REASONING_EFFORT] = opts.reasoning_effort
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
