"""The reference agents on Harbor: Harbor agents that run the standalone baseline scripts inside the
task's own offline container (the sandbox image: Python 3.11, numpy, Pillow, ffmpeg), and the job runner.

    PYTHONPATH=. harbor run -p <Protocol B dataset> -a agents.perception_agent:PerceptionAgent -n 2
    PYTHONPATH=. harbor run -p <Protocol B dataset> -a agents.chance_agent:ChanceAgent --ak seed=0 \
        --ak rates=chess=6,go=6 [--ak 'where={"chess":["abcdefgh","12345678"]}'] [--ak mode=majority]
    video-arena baselines --harbor [--games chess --limit 1]    (generates the dataset, runs, scores)
    video-arena parity --games chess                             (each agent natively and on Harbor)

Each agent copies its files into one folder of the container (as the agent user, through `exec`: the
perception agent's dispatcher with the readers' shared helpers, every game's reader and their index, as
`video-arena baselines` installs them for run-b; the chance agent's one script) and runs
`python3 <folder>/<script> --sandbox /app ...`; the script writes /app/answer.json, exactly as under run-b.
"""
from __future__ import annotations

import base64
import contextlib
import json
import os
import shlex
import sys
import time
from pathlib import Path

from video_arena import paths, progress
from video_arena.harbor_api import trials as TR
from video_arena.toolkit_info import toolkit_provenance
from video_arena.container_host.docker_host import ensure_docker
from video_arena.harbor.generate import Options, generate
from video_arena.container_host.image import image_exists
from video_arena.games import readers as RD
from video_arena.harbor import oracle_check as OC
from video_arena.harbor import spec as S
from video_arena.scoring import cells as SC
from video_arena.scoring.harbor_jobs import score_any

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "perception_agent.py"
CHANCE_SCRIPT = HERE / "chance_agent.py"
AGENT = "agents.perception_agent:PerceptionAgent"
CHANCE_AGENT = "agents.chance_agent:ChanceAgent"

try:  # Harbor is only needed for the Harbor run itself
    from video_arena.harbor_api.agents import BaseAgent
except ImportError:  # pragma: no cover - the class is unusable without Harbor, and unused
    BaseAgent = object  # type: ignore[assignment,misc]


#: where an agent's files are copied inside the container
AGENT_DIR = "/tmp/va-agent"


class ScriptAgent(BaseAgent):  # type: ignore[misc,valid-type]
    """A standalone baseline script run inside the task's container with `--sandbox /app` and its args."""

    script: Path = SCRIPT
    log_name = "agent.log"

    def files(self) -> list[tuple[str, bytes]]:
        """(name, bytes) of the files the script runs with, copied flat beside it (the script first)."""
        return [(self.script.name, self.script.read_bytes())]

    def __init__(self, *args, timeout: int = 3600, **kwargs):
        super().__init__(*args, **kwargs)
        self.timeout = int(timeout)

    def version(self) -> str | None:
        return str(toolkit_provenance().get("toolkit_version"))

    def script_args(self) -> list[str]:
        return []

    async def setup(self, environment) -> None:
        return None

    async def run(self, instruction, environment, context) -> None:
        res = await environment.exec(f"mkdir -p {AGENT_DIR}", timeout_sec=60)
        for name, data in self.files():   # one exec per file: a command line holds one file's base64
            b64 = base64.b64encode(data).decode()
            res = await environment.exec(f"echo {b64} | base64 -d > {AGENT_DIR}/{shlex.quote(name)}", timeout_sec=60)
            if res.return_code != 0:
                raise RuntimeError(f"cannot copy {name} into the container: {(res.stdout or '')[-300:]}")
        target = f"{AGENT_DIR}/{self.script.name}"
        cmd = " ".join(["cd /app && python3", target, "--sandbox", "/app", *map(shlex.quote, self.script_args())])
        res = await environment.exec(cmd, timeout_sec=self.timeout)
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        (self.logs_dir / self.log_name).write_text((res.stdout or "") + (res.stderr or ""))
        context.metadata = {"return_code": res.return_code}


class PerceptionAgent(ScriptAgent):
    script = SCRIPT
    log_name = "perception.log"

    def files(self) -> list[tuple[str, bytes]]:
        return RD.agent_files(self.script)

    @staticmethod
    def name() -> str:
        return "video-arena-perception"


class ChanceAgent(ScriptAgent):
    """chance_agent.py: `--ak seed=N --ak rates=title=per_minute,... [--ak where=JSON] [--ak mode=majority]`
    (the rates and `where` tables as `video-arena baselines` passes them to run-b, so both harnesses draw
    the same rows; Harbor hands a JSON value over parsed, so `where` is a text or the object)."""

    script = CHANCE_SCRIPT
    log_name = "chance.log"

    def __init__(self, *args, seed: int = 0, rates: str = "", mode: str = "chance", where: str | dict = "",
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.seed, self.rates, self.mode = int(seed), str(rates), str(mode)
        self.where = where if isinstance(where, str) else json.dumps(where, sort_keys=True, separators=(",", ":"))
        if not self.rates:
            raise ValueError("ChanceAgent needs --ak rates=title=events_per_minute,... (see video-arena baselines)")

    @staticmethod
    def name() -> str:
        return "video-arena-chance"

    def script_args(self) -> list[str]:
        return ["--mode", self.mode, "--seed", str(self.seed), "--rates", self.rates] + (
            ["--where", self.where] if self.where else [])


@contextlib.contextmanager
def repo_on_pythonpath():
    """The checkout first on PYTHONPATH while Harbor runs, so `-a agents.<module>:<Agent>` imports."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(paths.REPO_ROOT), old]))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def harbor_ready() -> str:
    """'' when Docker is usable and the sandbox image is built, else why a Harbor run cannot be made."""
    ok, why = ensure_docker(echo=lambda *_: None)
    if not ok:
        return f"Docker is not usable ({why})"
    if not image_exists(S.DEFAULT_BASE_IMAGE):
        return f"the image {S.DEFAULT_BASE_IMAGE} is not built (`video-arena image build`)"
    return ""


def run_job(dataset: Path, agent: str, job: str, jobs_dir: Path, n_tasks: int, media_root: Path,
            extra: tuple[str, ...] = ()) -> int:
    """`harbor run` of one agent on a dataset, with a progress bar over its trials."""
    with repo_on_pythonpath(), progress.bar(n_tasks, "harbor", "trial") as bar, \
            progress.watch(bar, lambda: TR.finished_trials(jobs_dir / job)):
        return OC.run_harbor(dataset, agent, job, jobs_dir, media_root, n_concurrent=2, extra=extra)


def run_perception_on_harbor(out: Path, games: list[str], limit: int | None, tasks_root: Path) -> str:
    """Generate a Protocol B dataset (--net compose-none), run the agent on it, score the job; a note line."""
    why = harbor_ready()
    if why:
        return f"Harbor run not made: {why}."
    media_root = paths.media_root(tasks_root)
    dataset = out / "dataset-b"
    res = generate(Options(out=dataset, protocol="B", net="compose-none", media="mount", tasks_root=tasks_root,
                           games=games, limit=limit, force=True, progress=False))
    if res.missing_media:
        return f"Harbor run not made: {len(res.missing_media)} videos missing (e.g. {res.missing_media[0]})."
    job = f"perception-{time.strftime('%Y%m%d-%H%M%S')}"
    rc = run_job(dataset, AGENT, job, out / "jobs", len(res.tasks), media_root)
    if rc != 0:
        print(f"baselines: harbor run exited {rc}", file=sys.stderr)
    system = score_any(out / "jobs" / job, tasks_root, progress=False)
    parts = []
    for g in games:
        gs = system.games.get(g)
        if gs is not None and gs.means.get(SC.T1_F1) is not None:
            parts.append(f"{g} T1 {gs.means[SC.T1_F1]:.3f} (n={gs.n[SC.T1_F1]})")
    return ("Harbor (`--harbor`, Protocol B dataset with `--net compose-none`, agent "
            f"`{AGENT}`): " + ("; ".join(parts) or "no trial scored") + ".")
