"""The Protocol A request engine: one OpenAI-compatible `/chat/completions` call per cell.

Seed 003's discipline, applied:

* The request is built once as a *reference body* in which every still is named by its own SHA-256
  (video_arena/core/request.py: the scorer rebuilds it there too, core/provenance.py); its canonical
  JSON's SHA-256 is the request hash; the bytes sent are that body with each reference swapped for
  the data URL of the still (or of the MP4 built from them).
* Retries (at most `retry.max_retries`, one shared budget): rate limits (429), timeouts, dropped
  connections and 200 replies that are not chat completions wait 1, 2, 4 s; server errors (5xx) wait
  10, 20, 40 s; each schedule advances on its own failures only (a 5xx after a 429 waits 10 s); a 429
  or 5xx whose `Retry-After` (or `retry-after-ms`) asks for longer waits that long, at most
  MAX_RETRY_AFTER_S (the header's value is recorded in the attempt as `retry_after_header_s`).  A
  reply with no visible answer (no text, whether the host returned nothing or the guard cut off a
  reasoning-only reply) is redrawn inside the same budget.  Other 4xx errors are not retried.
* Every attempt has a total deadline (`request_timeout_s`) over the whole call, not per read.
* Degradations are recorded, never silent: a body over the declared cap (or an HTTP 413, or a
  gateway's body-size text) raises `jpeg_q` step by step; a server's image-count cap below the grid
  (vLLM's "At most 64 image(s) may be provided in one prompt.") re-samples the grid once with that
  many stills, spread uniformly over the whole match; a context-length refusal ends the cell as
  `context_overflow`, or with on_overflow="degrade" re-samples with fewer stills (server_limits.py).
  A 400 is never re-sent unchanged.
* A reply that hit `max_tokens` (finish_reason "length") makes the cell not protocol_complete.
* The model the server names in each reply (`model` of the completion) is recorded per attempt and for
  the cell (`served_model`): a gateway that routes to another model is visible, and the scorer flags it.
* A redirect is never followed unless it keeps the method (307, 308) and stays under the base URL: a
  302 would turn the POST into a GET whose canned page is not the model's answer; any other redirect
  ends the cell as a harness error (missing, never scored).
"""
from __future__ import annotations

import base64
import functools
import json
import math
import re
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from email.utils import parsedate_to_datetime

import httpx
import openai

from video_arena.core.condition import Condition, retry_scale
from video_arena.core.request import IMAGE_REF, MP4_REF, RequestOptions, materialize, reference_body, request_sha256
from video_arena.digests import sha256_bytes
from video_arena.media import grid as G
from video_arena.protocol_a import server_limits as SL

class HarnessError(RuntimeError):
    """The call never produced a reply: the cell is missing (stop_reason harness_error), not 0.0."""

    stop_reason = "harness_error"

    def __init__(self, message: str, attempts: list[dict[str, Any]] | None = None,
                 degradations: list[dict[str, Any]] | None = None):
        super().__init__(message)
        self.attempts = attempts or []
        self.degradations = degradations or []


class ContextOverflow(HarnessError):
    """The server refused the request as longer than the model's context (server_limits): the cell
    ends with stop_reason context_overflow (no answer), counted in its own column by the scorer."""

    stop_reason = "context_overflow"


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
    lone_surrogates: int = 0
    #: the `model` the server named in the reply (None when it named none)
    served_model: str | None = None


#: A reply body larger than this is not read further (a transport error): no chat completion with
#: one answer comes near it, and an endpoint streaming without end must not exhaust memory.
MAX_REPLY_BYTES = 64 * 1024 * 1024
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_TEXT_PART_TYPES = ("text", "output_text")
#: finish reasons that say the server, not the model, ended the generation (vLLM "abort", OpenRouter and
#: others "error"): the reply is a transport error, never scored
FAILED_FINISH_REASONS = ("error", "abort")


class BadReply(Exception):
    """HTTP 200 whose body is not a chat completion (an HTML page, `choices` not a list, a null
    message, content of a wrong type, an oversized or non-UTF-8 body): a transport error."""


class DeadlineExceeded(Exception):
    """The whole request (connect, send, headers, body) took longer than request_timeout_s."""


def safe_text(s: str) -> tuple[str, int]:
    """(s with every lone UTF-16 surrogate replaced by U+FFFD, how many were replaced).

    A JSON reply may carry "\\ud800" escapes that decode to lone surrogates, which cannot be written
    as UTF-8; replacing them keeps reply.txt, run.json and answer.json writable and consistent."""
    n = len(_SURROGATE_RE.findall(s))
    return (_SURROGATE_RE.sub("\ufffd", s), n) if n else (s, 0)


@dataclass
class Reply:
    """A parsed chat completion (the first choice)."""

    content: str
    finish_reason: str | None
    usage: dict[str, Any]
    reasoning: str | None
    lone_surrogates: int = 0
    #: the completion's `model`: the model the server says produced the reply
    model: str | None = None


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _usage(d: Any) -> dict[str, Any]:
    if not isinstance(d, dict):
        return {}
    out = {k: _int_or_none(d.get(k)) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    details = d.get("completion_tokens_details") or {}
    if isinstance(details, dict) and _int_or_none(details.get("reasoning_tokens")) is not None:
        out["reasoning_tokens"] = details["reasoning_tokens"]
    return out


def _content_text(content: Any) -> str:
    """The visible text of a message's content: a string, null (""), or a list of parts whose text
    parts are joined in order (other parts, e.g. images, carry no answer).  Anything else: BadReply."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") in _TEXT_PART_TYPES:
                t = part.get("text")
                if isinstance(t, dict):  # {"type": "output_text", "text": {"value": ...}}
                    t = t.get("value")
                if not isinstance(t, str):
                    raise BadReply(f"a text part of the content holds {type(t).__name__}, not text")
                texts.append(t)
            elif not isinstance(part, dict):
                raise BadReply(f"a content part is {type(part).__name__}, not an object")
        return "".join(texts)
    raise BadReply(f"message content is {type(content).__name__}, not text or a list of parts")


def parse_completion(raw: bytes) -> Reply:
    """Parse a 200 reply body as a chat completion; raise BadReply when it is not one."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # includes UnicodeDecodeError
        head = raw[:120].decode("utf-8", "replace").strip().replace("\n", " ")
        raise BadReply(f"the body is not JSON ({type(exc).__name__}): {head!r}") from None
    if not isinstance(doc, dict):
        raise BadReply(f"the body is a JSON {type(doc).__name__}, not a chat completion object")
    if "choices" not in doc:
        err = doc.get("error")
        raise BadReply(f"no choices in the body{f': error {str(err)[:200]!r}' if err else ''}")
    choices = doc["choices"]
    if not isinstance(choices, list):
        raise BadReply(f"choices is {type(choices).__name__}, not a list")
    if doc.get("error"):  # a gateway's failure beside whatever text it had (OpenRouter: status 200)
        raise BadReply(f"the body carries an error beside its choices: {str(doc['error'])[:200]!r}")
    served = safe_text(doc["model"])[0][:200] if isinstance(doc.get("model"), str) else None
    if not choices:  # a well-formed completion without a choice: no visible answer (redrawn)
        return Reply(content="", finish_reason=None, usage=_usage(doc.get("usage")), reasoning=None, model=served)
    choice = choices[0]
    if not isinstance(choice, dict):
        raise BadReply(f"choices[0] is {type(choice).__name__}, not an object")
    msg = choice.get("message")
    if not isinstance(msg, dict):
        raise BadReply(f"choices[0].message is {'null' if msg is None else type(msg).__name__}")
    content, n_sur = safe_text(_content_text(msg.get("content")))
    reasoning = msg.get("reasoning_content") or msg.get("reasoning")
    reasoning = safe_text(reasoning)[0] if isinstance(reasoning, str) else None
    finish = choice.get("finish_reason")
    if finish in FAILED_FINISH_REASONS:  # the server's generation failed: its text is not the model's answer
        raise BadReply(f"finish_reason {finish!r}: the server's generation failed part-way")
    return Reply(content=content, finish_reason=finish if isinstance(finish, str) else None,
                 usage=_usage(doc.get("usage")), reasoning=reasoning, lone_surrogates=n_sur, model=served)


def _read_capped(resp: Any) -> bytes:
    buf = bytearray()
    for chunk in resp.iter_bytes():
        buf += chunk
        if len(buf) > MAX_REPLY_BYTES:
            raise BadReply(f"the reply body exceeds {MAX_REPLY_BYTES} bytes")
    return bytes(buf)


class RedirectRefused(openai.OpenAIError):
    """The server answered with a redirect that changes the method (301, 302, 303) or leaves the base URL:
    not followed (a GET's canned page must never be recorded as the model's answer)."""


def redirect_guard(base_url: str) -> Callable[[httpx.Response], None]:
    """An httpx response hook that lets only method-keeping redirects (307, 308) under `base_url` through."""
    base = httpx.URL(str(base_url))
    prefix = base.path if base.path.endswith("/") else base.path + "/"

    def check(response: httpx.Response) -> None:
        if not response.is_redirect:
            return
        target = response.url.join(response.headers.get("location", ""))
        same = (target.scheme, target.host, target.port) == (base.scheme, base.host, base.port) \
            and (target.path + "/").startswith(prefix)
        if response.status_code not in (307, 308) or not same:
            raise RedirectRefused(f"the server redirected the request (HTTP {response.status_code} to "
                                  f"{str(target)[:200]}): not followed (a redirect may change the method or leave "
                                  f"the endpoint {base})")

    return check


@functools.lru_cache(maxsize=1)
def _ssl_context():
    """httpx's default verification context, built once (building it per attempt costs ~0.2 s)."""
    return httpx.create_ssl_context()


def call_once(client: openai.OpenAI, body: dict[str, Any], timeout_s: float) -> Reply:
    """One HTTP attempt with a total deadline of `timeout_s` over the whole call (connect, upload,
    headers and body), not only per read: the call runs in a worker thread on its own connection
    pool; at the deadline that pool is closed (which ends the worker's next read) and
    DeadlineExceeded is raised.  HTTP errors raise the openai client's exceptions; a 200 that is not
    a chat completion raises BadReply."""
    deadline = time.monotonic() + timeout_s
    http = httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=True, verify=_ssl_context(),
                        event_hooks={"response": [redirect_guard(str(client.base_url))]})
    c = client.with_options(http_client=http, max_retries=0, timeout=timeout_s)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            with c.chat.completions.with_streaming_response.create(
                    **{k: v for k, v in body.items() if k in ("model", "messages")},
                    extra_body={k: v for k, v in body.items() if k not in ("model", "messages")},
                    timeout=timeout_s) as resp:
                box["raw"] = _read_capped(resp)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["exc"] = exc

    t = threading.Thread(target=work, name="va-a-request", daemon=True)
    t.start()
    t.join(max(0.0, deadline - time.monotonic()))
    if t.is_alive():
        # close the worker's pool (its socket) from another thread, so this call returns now: the
        # worker's next read fails and it ends
        threading.Thread(target=http.close, name="va-a-abort", daemon=True).start()
        raise DeadlineExceeded(f"no complete reply within request_timeout_s={timeout_s:g} s")
    http.close()
    if "exc" in box:
        raise box["exc"]
    return parse_completion(box["raw"])


def _classify(exc: Exception) -> tuple[str, int | None]:
    """('rate_limit'|'timeout'|'bad_reply'|'server'|'too_large'|'image_cap'|'context_overflow'|'fatal',
    status).  A refusal that states a server limit (server_limits.classify) is never retried as is."""
    if isinstance(exc, DeadlineExceeded):
        return "timeout", None
    if isinstance(exc, RedirectRefused):
        return "fatal", None
    if isinstance(exc, BadReply):
        return "bad_reply", 200
    if isinstance(exc, (httpx.TransportError, httpx.StreamError)):  # raised while reading the body
        return "timeout", None
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
        limit = SL.classify(st, SL.error_text(exc))
        if limit is not None:
            return limit.kind, st
        if st >= 500:
            return "server", st
        return "fatal", st
    return "fatal", None


#: The longest wait a server's Retry-After is honoured for (a longer one is cut to this, and recorded).
MAX_RETRY_AFTER_S = 120.0


def retry_after_s(exc: Exception) -> float | None:
    """The wait a refusal asks for: its `retry-after-ms` or `Retry-After` header (seconds, or an HTTP date),
    None when it names none or an unreadable one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            v = float(ms) / 1000.0
            return v if math.isfinite(v) and v >= 0 else None
        raw = headers.get("retry-after")
        if raw is None:
            return None
        try:
            v = float(raw)
        except ValueError:
            when = parsedate_to_datetime(raw)
            v = when.timestamp() - time.time()
            return max(v, 0.0) if math.isfinite(v) else None
        return v if math.isfinite(v) and v >= 0 else None
    except (TypeError, ValueError, OverflowError):
        return None


FramesProvider = Callable[[G.GridSpec], G.FrameSet]


def run_request(client: openai.OpenAI, cond: Condition, opts: RequestOptions, prompt_for: Callable[[G.FrameSet], str],
                frames_for: FramesProvider, spec: G.GridSpec, degradations: list[dict[str, Any]] | None = None,
                sleep: Callable[[float], None] = time.sleep, log: Callable[[str], None] = lambda s: None,
                on_overflow: str = "stop") -> Outcome:
    """Make the cell's one request (with retries, redraws and recorded degradations).  `on_overflow`
    ("stop" or "degrade") is what a context-length refusal leads to (server_limits)."""
    if on_overflow not in SL.ON_OVERFLOW:
        raise ValueError(f"on_overflow must be one of {SL.ON_OVERFLOW}, not {on_overflow!r}")
    degradations = list(degradations or [])
    image_capped = False  # the server's image cap is honoured once; a second refusal ends the cell
    overflow_steps = 0
    attempts: list[dict[str, Any]] = []
    frames = frames_for(spec)
    retries = 0  # one budget shared by every kind of retry and redraw
    per_schedule: dict[str, int] = {}  # each retry schedule advances on its own failures only
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
                reply = call_once(client, body, cond.request_timeout_s)
            except Exception as exc:  # noqa: BLE001 - classified below
                kind, status = _classify(exc)
                message = safe_text(str(exc))[0]
                att.update(wall_s=round(time.monotonic() - t0, 3), error=kind, status=status,
                           message=message[:500])
                attempts.append(att)
                last_error = f"{kind} ({status}): {message[:300]}"
                log(f"attempt {att['n']}: {last_error}")
                if kind == "too_large":
                    spec, frames = _raise_jpeg_q(cond, spec, frames_for, degradations, attempts,
                                                 f"HTTP {status} body too large at {body_bytes} B")
                    continue
                if kind in ("image_cap", "context_overflow"):
                    limit = SL.classify(status, SL.error_text(exc))
                    n_now = frames.plan.n
                    if kind == "image_cap":
                        n_new = limit.cap if limit and limit.cap is not None else None
                        if image_capped or n_new is None or not 1 <= n_new < n_now:
                            raise HarnessError(f"server image cap: {last_error} (not re-sent: "
                                               f"{'already re-sent at a cap' if image_capped else 'no usable cap stated'})",
                                               attempts, degradations)
                        image_capped = True
                        why = f"server image cap {n_new}: {message[:200]}"
                    else:
                        n_new = SL.overflow_frames(limit, n_now, opts.max_tokens) if limit else None
                        if on_overflow != "degrade" or n_new is None or overflow_steps >= SL.MAX_OVERFLOW_STEPS:
                            why_not = ("--on-overflow stop" if on_overflow != "degrade" else
                                       "fewer stills cannot fit it" if n_new is None else
                                       f"{SL.MAX_OVERFLOW_STEPS} re-samplings already")
                            raise ContextOverflow(f"context overflow at {n_now} stills ({why_not}): {message[:300]}",
                                                  attempts, degradations)
                        overflow_steps += 1
                        why = f"context overflow at {n_now} stills: {message[:200]}"
                    degradations.append({"kind": "max_frames", "from": n_now, "to": n_new, "why": why})
                    spec = G.GridSpec(fps=spec.fps, max_frames=n_new, longest_side=spec.longest_side,
                                      jpeg_q=spec.jpeg_q)
                    frames = frames_for(spec)
                    continue
                if kind == "fatal":
                    raise HarnessError(f"request failed without retry: {last_error}", attempts, degradations)
                if retries >= cond.max_retries:
                    raise HarnessError(f"no reply after {retries} retries: {last_error}", attempts, degradations)
                schedule = cond.retry_schedule(kind)
                delay = cond.retry_delay(kind, per_schedule.get(schedule, 0))
                per_schedule[schedule] = per_schedule.get(schedule, 0) + 1
                asked = retry_after_s(exc) if kind in ("rate_limit", "server") else None
                if asked is not None:   # the server's own wait, when longer than the schedule's (capped)
                    att["retry_after_header_s"] = round(asked, 3)
                    delay = max(delay, min(asked, MAX_RETRY_AFTER_S) * retry_scale())
                att["retry_after_s"] = delay
                retries += 1
                sleep(delay)
                continue

            content, finish, usage, reasoning = reply.content, reply.finish_reason, reply.usage, reply.reasoning
            visible = bool(content.strip())
            att.update(wall_s=round(time.monotonic() - t0, 3), finish_reason=finish,
                       reply_chars=len(content), visible=visible, usage=usage, served_model=reply.model)
            if reply.lone_surrogates:
                att["lone_surrogates_replaced"] = reply.lone_surrogates
            attempts.append(att)
            outcome = Outcome(reply=content, finish_reason=finish, usage=usage, attempts=attempts,
                              degradations=degradations, frames=frames, spec=spec, request_sha256=rsha,
                              body_bytes=body_bytes, mp4_sha256=sha256_bytes(mp4) if mp4 else None,
                              reasoning=reasoning, visible=visible, hit_max_tokens=finish == "length",
                              lone_surrogates=reply.lone_surrogates, served_model=reply.model)
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
