"""What a serving stack's refusal says about its limits, and what Protocol A does about it.

A 400 is never re-sent unchanged.  Three limits are recognised in the error text (and, for the
body size, the status):

* **image_cap**: too many images in one request.  vLLM: "At most 64 image(s) may be provided in one
  prompt." (`vllm/multimodal/processing/context.py`, `validate_num_items`); SGLang: "Image count 300
  exceeds limit 64"; OpenAI-style gateways: "Too many images in request ... maximum allowed: 250" or
  "... supports a maximum of 10 images".  The request is re-sent ONCE with the grid re-sampled at the
  server's stated cap (a recorded `max_frames` degradation); a refusal that states no cap, or a second
  refusal, ends the cell.  A refusal of one image's size ("Image size exceeds the maximum of 20 MB") is
  not a count: never an image cap (the cell ends as a harness error, its text recorded).
* **context_overflow**: the prompt (the stills' tokens) plus `max_tokens` do not fit the model's
  context.  vLLM "This model's maximum context length is N tokens. However, your request has M input
  tokens." (and the "you requested M tokens (P in the messages, C in the completion)" form, and the
  "'max_tokens' or 'max_completion_tokens' is too large" form, the "you requested C output tokens and your
  prompt contains at least M input tokens" form, and V1's engine check once the images are counted: "The
  decoder prompt (length M) is longer than the maximum model length of N."); SGLang "The input (M tokens) is longer
  than the model's context length (N tokens)." / "Requested token count exceeds the model's maximum
  context length of N tokens ..."; OpenAI `code: context_length_exceeded`; OpenRouter "This endpoint's
  maximum context length is N tokens. However, you requested about M tokens ...".  By default the cell
  ends with stop reason `context_overflow` (no answer; counted in its own column by the scorer).  With
  `on_overflow="degrade"` the request is re-sent with fewer stills (each step a recorded `max_frames`
  degradation, at most `MAX_OVERFLOW_STEPS`, each strictly fewer stills than the last).
* **too_large**: HTTP 413, or a 400/502 whose text is a gateway's body-size refusal ("Request Entity Too
  Large", "Payload Too Large", "request body too large", "exceeds the maximum request size").  The
  existing jpeg_q step (engine._raise_jpeg_q) re-encodes the stills smaller.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

ON_OVERFLOW = ("stop", "degrade")
#: how many times a context overflow may be answered with fewer stills before the cell stops
MAX_OVERFLOW_STEPS = 4
#: the share of the context left for the prompt's estimate when re-sampling (token counts of stills
#: are not exactly proportional to their number: the text prompt is fixed, rounding differs)
OVERFLOW_MARGIN = 0.9

_IMAGE_CAP_PATTERNS = [
    # vLLM (vllm/multimodal/processing/context.py): "At most 64 image(s) may be provided in one prompt."
    re.compile(r"at most (\d+) image\(s\) may be provided", re.I),
    # SGLang: "Image count 300 exceeds limit 64"
    re.compile(r"image count \d+ exceeds (?:the )?limit(?: of)? (\d+)", re.I),
    # "... supports a maximum of 10 images" / "maximum of 50 allowed per request"
    re.compile(r"images?.{0,80}?maximum of (\d+)", re.I | re.S),
    re.compile(r"exceeding the maximum of (\d+)", re.I),
    # "The number of images in the request exceeds the limit of 100."
    re.compile(r"number of images.{0,60}?exceeds? (?:the )?(?:limit|maximum)(?: allowed)?(?: of|:)?\s*(\d+)", re.I | re.S),
    # "Too many images in request: 300, maximum allowed: 250" / "max images is 250" / "Max is 500"
    re.compile(r"too many images.{0,80}?(?:maximum|max)(?:imum)?(?: number of images)?(?: allowed)?(?: is|:)?\s*(\d+)",
               re.I | re.S),
]
_IMAGE_REFUSAL = re.compile(r"too many images|image\(s\) may be provided|image count \d+ exceeds|"
                            r"images?\b.{0,40}exceed", re.I)
#: a refusal of one image's size ("Image size exceeds the maximum of 20 MB"): not a count, so never an
#: image cap (re-sampling the grid to "20" stills would answer the wrong limit); left to end the cell
_IMAGE_SIZE_REFUSAL = re.compile(r"\bimages?\b.{0,60}?\b(?:size|dimensions?|resolution|too large|too big)\b|"
                                 r"\d+(?:\.\d+)?\s*(?:[kmg]i?b|bytes|megabytes|pixels|px)\b", re.I | re.S)

_CONTEXT_REFUSAL = re.compile(
    r"maximum context length|context_length_exceeded|longer than the model's context length|"
    r"maximum prompt length|context window|'max_tokens' or 'max_completion_tokens' is too large|"
    r"prompt \(length \d+\) is longer than the maximum model length", re.I)
#: (context limit, prompt tokens, completion tokens) from the texts above, where stated
_CTX_LIMIT = [re.compile(r"maximum context length (?:is|of) (\d+)", re.I),
              re.compile(r"model's context length \((\d+) tokens\)", re.I),
              re.compile(r"maximum prompt length is (\d+)", re.I),
              re.compile(r"longer than the maximum model length of (\d+)", re.I)]
_CTX_PROMPT = [re.compile(r"your request has (\d+) input tokens", re.I),
               re.compile(r"\((\d+) in the messages", re.I),
               re.compile(r"(\d+) tokens from the input messages", re.I),
               re.compile(r"the input \((\d+) tokens\)", re.I),
               re.compile(r"your messages resulted in (\d+) tokens", re.I),
               re.compile(r"(\d+) of text input", re.I),
               re.compile(r"has (\d+) input tokens", re.I),
               re.compile(r"prompt contains (?:at least )?(\d+) input tokens", re.I),
               re.compile(r"prompt \(length (\d+)\) is longer than the maximum model length", re.I)]
_CTX_COMPLETION = [re.compile(r"(\d+) in the completion", re.I),
                   re.compile(r"(\d+) tokens for the completion", re.I),
                   re.compile(r"(\d+) in the output", re.I),
                   re.compile(r"is too large: (\d+)", re.I),
                   re.compile(r"you requested (\d+) output tokens", re.I)]

_TOO_LARGE = re.compile(r"request entity too large|payload too large|(?:request )?body (?:is )?too large|"
                        r"request too large|exceeds the maximum request size|content.length.{0,20}too large|"
                        r"request_too_large", re.I)


@dataclass
class Limit:
    kind: str                       # image_cap | context_overflow | too_large
    cap: int | None = None          # image_cap: the stated cap
    context: int | None = None      # context_overflow: the stated context length
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def error_text(exc: Any) -> str:
    """The message a refusal carries: the openai client's `message` plus the raw body (so both the
    `{"error": {"message": ...}}` shape and vLLM's older top-level `{"object": "error", "message": ...}`
    shape are read), else str(exc)."""
    parts = [str(getattr(exc, "message", "") or "")]
    body = getattr(exc, "body", None)
    if body is not None:
        parts.append(body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, default=str))
    resp = getattr(exc, "response", None)
    if resp is not None:
        try:
            parts.append(resp.text[:20000])
        except Exception:  # noqa: BLE001 - a streamed body that was not read
            pass
    parts.append(str(exc))
    return "\n".join(p for p in parts if p)


def _first_int(patterns: list[re.Pattern], text: str) -> int | None:
    for p in patterns:
        m = p.search(text)
        if m:
            return int(m.group(1))
    return None


def classify(status: int | None, text: str) -> Limit | None:
    """The server limit a refusal states, or None when it is not one of the three."""
    if status == 413:
        return Limit("too_large")
    if status not in (400, 422, 502, 500):
        return None
    if status in (400, 422) and _IMAGE_REFUSAL.search(text) and not _IMAGE_SIZE_REFUSAL.search(text):
        return Limit("image_cap", cap=_first_int(_IMAGE_CAP_PATTERNS, text))
    if status in (400, 422) and _CONTEXT_REFUSAL.search(text):
        return Limit("context_overflow", context=_first_int(_CTX_LIMIT, text),
                     prompt_tokens=_first_int(_CTX_PROMPT, text),
                     completion_tokens=_first_int(_CTX_COMPLETION, text))
    if _TOO_LARGE.search(text):
        return Limit("too_large")
    return None


def overflow_frames(limit: Limit, n_frames: int, max_tokens: int) -> int | None:
    """How many stills to re-send after a context overflow at `n_frames`, or None when fewer stills
    cannot help (the completion budget alone fills the context, or one still is already too many).

    With the context N, the prompt's tokens P and the completion budget C stated, the stills are cut in
    proportion: floor(n * (N - C) / P * OVERFLOW_MARGIN).  Otherwise (nothing stated) halved."""
    c = limit.completion_tokens if limit.completion_tokens is not None else max_tokens
    if limit.context is not None and c >= limit.context:
        return None
    if limit.context is not None and limit.prompt_tokens:
        room = limit.context - c
        n = math.floor(n_frames * room / limit.prompt_tokens * OVERFLOW_MARGIN)
    else:
        n = n_frames // 2
    n = min(n, n_frames - 1)
    return n if n >= 1 else None
