"""The Protocol A Harbor agent (docs/HARBOR.md, "Protocol A on Harbor"); `agents/protocol_a_agent.py`
re-exports `ProtocolA` so Harbor can load it as `-a protocol_a_agent:ProtocolA` (PYTHONPATH=agents).

The model never sees the container.  The agent

1. probes /app/match.mp4 with ffprobe inside the offline container (demux only) and copies the
   packet timestamps out,
2. plans the grid on the host and runs the very commands the native runner runs
   (video_arena.media.grid.frame_commands) inside the container, as one shell script,
3. copies the stills out to its logs (agent/frames/),
4. builds the prompt with protocol_a_prompt() from the task's instruction (already rendered for
   Protocol A) and makes the one /chat/completions call from the host, through the same engine as
   the native runner ($OPENAI_API_KEY, $OPENAI_BASE_URL, or --ae),
5. uploads the extracted answer with the environment's file upload and moves it to /app/answer.json
   as the agent user (its SHA-256 checked in the container).  A reply without an answer
   leaves the seed (scores 0.0); a call that never got a reply raises, so the trial is a harness
   exception (missing), never 0.0.

Options (--ak): reasoning_effort, enable_thinking, max_frames, jpeg_q, max_tokens (48000),
temperature (0), timeout (seconds per request), condition (a condition file), extra_body (JSON),
on_overflow (stop|degrade: what a context-length refusal leads to; server_limits.py).  A context
overflow with on_overflow=stop raises ContextOverflowError (the scorer counts the trial 0.0 on every
metric, in its context_overflow column).
The agent logs hold run.json, prompt.txt, reply.txt, receipt.json, answer.json, the frames and the
condition file (_conditions/<digest>.json: what `score` rebuilds the request from).
"""
from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

import openai

from video_arena.core.tasks import CASE_ID_RE, GAME_RE, TasksTreeError
from video_arena.games.base import load_definition
from video_arena.digests import sha256_bytes
from video_arena.harbor_api.agents import AgentCapabilities, AgentContext, BaseAgent, BaseEnvironment, extra_env
from video_arena.harbor_api.trials import trial_task
from video_arena.media import grid as G
from video_arena.protocol_a.request_cell import execute_cell
from video_arena.core.condition import CONDITIONS_SUBDIR, load_condition
from video_arena.core.results import HarborAgentMetadata, or_none
from video_arena.core.request import RequestOptions, check_extra_body

MEDIA = "/app/match.mp4"
ANSWER = "/app/answer.json"
WORK = "/tmp/va_a"
VERSION = "1.0.0"


class ContextOverflowError(RuntimeError):
    """The trial's request did not fit the model's context (stop reason context_overflow)."""


def _opt_bool(v: Any) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"enable_thinking: expected true or false, got {v!r}")


def model_id(model_name: str | None) -> str:
    """`-m openai/<model>` -> `<model>` (the provider prefix is Harbor's, not the endpoint's)."""
    if not model_name:
        raise ValueError("ProtocolA needs a model: -m openai/<model>")
    return model_name[len("openai/"):] if model_name.startswith("openai/") else model_name


def game_case_of(session_id: str | None, logs_dir: Path) -> tuple[str | None, str | None]:
    """(game, case_id) from the trial's task name `<game>-<case_id>` (best effort; None if unknown)."""
    for name in (session_id or "", logs_dir.parent.name):
        task = trial_task(name)
        if "-" in task:
            game, case = task.rsplit("-", 1)
            if GAME_RE.match(game) and CASE_ID_RE.match(case):
                return game, case
    return None, None


def game_version_of(game: str | None) -> int | None:
    """The version of the toolkit's definition of `game` (the one make-harbor stamps into the task's
    metadata from a tree synced with it); None for a game the toolkit does not define."""
    try:
        return load_definition(game).version if game else None
    except (LookupError, OSError, TasksTreeError):
        return None


class ProtocolA(BaseAgent):
    # Harbor refuses --ak reasoning_effort for agents that do not declare it; this one sends it as-is.
    capabilities = AgentCapabilities(reasoning_effort=True)

    def __init__(self, *args, reasoning_effort: str | None = None, enable_thinking: Any = None,
                 max_frames: int | None = None, jpeg_q: int | None = None, max_tokens: int | None = None,
                 temperature: float | None = None, timeout: float | None = None,
                 condition: str | None = None, extra_body: Any = None, on_overflow: str | None = None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.cond = load_condition(condition)
        self.reasoning_effort = None if reasoning_effort in (None, "") else str(reasoning_effort)
        self.enable_thinking = _opt_bool(enable_thinking)
        self.max_frames = int(max_frames) if max_frames not in (None, "") else None
        self.jpeg_q = int(jpeg_q) if jpeg_q not in (None, "") else None
        self.max_tokens = int(max_tokens) if max_tokens not in (None, "") else self.cond.max_tokens
        self.temperature = float(temperature) if temperature not in (None, "") else self.cond.temperature
        self.timeout = float(timeout) if timeout not in (None, "") else self.cond.request_timeout_s
        if isinstance(extra_body, str):
            extra_body = json.loads(extra_body) if extra_body.strip() else {}
        self.extra_body = dict(extra_body or {})
        check_extra_body(self.extra_body)
        self.on_overflow = str(on_overflow or "stop")
        if self.on_overflow not in ("stop", "degrade"):
            raise ValueError(f"on_overflow: expected stop or degrade, got {on_overflow!r}")
        self.cond.grid(jpeg_q=self.jpeg_q, max_frames=self.max_frames)  # validate early

    @staticmethod
    def name() -> str:
        return "video-arena-protocol-a"

    def version(self) -> str | None:
        return VERSION

    async def setup(self, environment: BaseEnvironment) -> None:
        res = await environment.exec("ffmpeg -version | head -n1 && ffprobe -version | head -n1", timeout_sec=60)
        if res.return_code != 0:
            raise RuntimeError(f"ffmpeg/ffprobe unavailable in the sandbox: {res.stdout} {res.stderr}")
        self.logger.info("setup: %s", (res.stdout or "").strip().replace("\n", " | "))

    def _env(self, key: str) -> str | None:
        return extra_env(self).get(key) or os.environ.get(key)

    async def _sh(self, environment: BaseEnvironment, script: str, timeout: int = 3600) -> str:
        res = await environment.exec(script, timeout_sec=timeout)
        if res.return_code != 0:
            raise G.GridError(f"sandbox command failed ({res.return_code}): "
                              f"{((res.stdout or '') + (res.stderr or ''))[-2000:]}")
        return res.stdout or ""

    async def _probe(self, environment: BaseEnvironment) -> G.MediaInfo:
        info_cmd, pts_cmd = G.probe_commands(MEDIA)
        await self._sh(environment, f"rm -rf {WORK} && mkdir -p {WORK} && {shlex.join(info_cmd)} > {WORK}/info.json"
                                    f" && {shlex.join(pts_cmd)} > {WORK}/pts.csv", 1800)
        probe_dir = self.logs_dir / "probe"
        probe_dir.mkdir(parents=True, exist_ok=True)
        await environment.download_file(f"{WORK}/info.json", probe_dir / "info.json")
        await environment.download_file(f"{WORK}/pts.csv", probe_dir / "pts.csv")
        return G.parse_probe((probe_dir / "info.json").read_text(), (probe_dir / "pts.csv").read_text())

    async def _extract(self, environment: BaseEnvironment, info: G.MediaInfo, spec: G.GridSpec) -> G.FrameSet:
        plan = G.plan_grid(info, spec)
        remote = f"{WORK}/frames"
        ex = G.frame_commands(MEDIA, plan, info.pts, remote, key_pts=info.key_pts)
        script = G.shell_script(ex, remote)
        (self.logs_dir / "extract.sh").write_text(script)
        await self._sh(environment, script, 3600)
        local = self.logs_dir / "frames"
        if local.exists():
            shutil.rmtree(local)
        local.mkdir(parents=True)
        await environment.download_dir(remote, local)
        shas, sizes = G.hash_frames(local, plan.n)
        return G.FrameSet(frames_dir=local, plan=plan, media=info, frame_sha256=shas, frame_bytes=sizes,
                          commands=ex.cmds, mode=ex.mode)

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        inst = self.logs_dir / "instruction.md"
        inst.write_text(instruction, encoding="utf-8")
        # the condition file travels with the trial (agent/_conditions/<digest>.json, as run-a keeps it in
        # <out>/_conditions/), so `score` rebuilds the request of a custom --ak condition=FILE too
        (self.logs_dir / CONDITIONS_SUBDIR).mkdir(exist_ok=True)
        shutil.copyfile(self.cond.source, self.logs_dir / CONDITIONS_SUBDIR / f"{self.cond.sha256}.json")
        base_url = self._env("OPENAI_BASE_URL")
        if not base_url:
            raise RuntimeError("ProtocolA needs OPENAI_BASE_URL (host environment or --ae)")
        client = openai.OpenAI(base_url=base_url, api_key=self._env("OPENAI_API_KEY") or "EMPTY",
                               max_retries=0, timeout=self.timeout)
        opts = RequestOptions(model=model_id(self.model_name), max_tokens=self.max_tokens,
                              temperature=self.temperature, reasoning_effort=self.reasoning_effort,
                              enable_thinking=self.enable_thinking, extra_body=self.extra_body)
        cond = self.cond
        if self.timeout != cond.request_timeout_s:
            doc = dict(cond.doc, request_timeout_s=self.timeout)  # transport-level only; not in the request
            cond = type(cond)(doc=doc, sha256=cond.sha256, source=cond.source)
        info = await self._probe(environment)
        media_sha = (await self._sh(environment, f"sha256sum {MEDIA} | cut -d' ' -f1", 1800)).strip() or None
        loop = asyncio.get_running_loop()

        def frames_for(spec: G.GridSpec) -> G.FrameSet:
            fs = asyncio.run_coroutine_threadsafe(self._extract(environment, info, spec), loop).result()
            fs.media_sha256 = media_sha
            return fs

        game, case_id = game_case_of(self.session_id, self.logs_dir)
        record = await asyncio.to_thread(
            execute_cell, cond=cond, opts=opts, client=client, game=game, case_id=case_id,
            instruction_path=inst, frames_for=frames_for, out_dir=self.logs_dir, runner="harbor",
            jpeg_q=self.jpeg_q, max_frames=self.max_frames, log=self.logger.info, on_overflow=self.on_overflow,
            game_version=game_version_of(game))
        context.metadata = HarborAgentMetadata.of(record).to_doc()
        extras = record.protocol_a
        usage = extras.usage or {}
        if usage.get("prompt_tokens") is not None:
            context.n_input_tokens = usage.get("prompt_tokens")
        if usage.get("completion_tokens") is not None:
            context.n_output_tokens = usage.get("completion_tokens")
        if record.stop_reason == "context_overflow":
            raise ContextOverflowError(f"the server refused the request as over the model's context: "
                                       f"{or_none(extras.error)}")
        if record.stop_reason == "harness_error":
            raise RuntimeError(f"Protocol A call never got a reply: {or_none(extras.error)}")
        if record.answer_state == "answered":
            await self._write_answer(environment, self.logs_dir / "answer.json")
        # no_answer: /app/answer.json keeps the empty seed, which scores 0.0

    async def _write_answer(self, environment: BaseEnvironment, local: Path) -> None:
        """Put the answer at /app/answer.json through the environment's file upload (no size limit,
        unlike a shell argument, which Linux caps at 128 KiB: about 800 rows), then copy it into
        place as the agent user and check its SHA-256 in the container before the rename."""
        staged = f"{WORK}/answer.upload.json"
        await environment.upload_file(local, staged)
        digest = sha256_bytes(local.read_bytes())
        await self._sh(environment,
                       f"cp {staged} {ANSWER}.tmp && test \"$(sha256sum {ANSWER}.tmp | cut -d' ' -f1)\" = {digest}"
                       f" && mv -f {ANSWER}.tmp {ANSWER} && rm -f {staged}", 120)
