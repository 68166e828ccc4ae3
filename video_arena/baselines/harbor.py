"""The perception agent on Harbor: a Harbor agent that runs perception_agent.py inside the task's own
offline container (the sandbox image: Python 3.11, numpy, Pillow, ffmpeg), and the job runner.

    PYTHONPATH=. harbor run -p <Protocol B dataset> -a agents.perception_agent:PerceptionAgent -n 2
    video-arena baselines --harbor [--games chess --limit 1]    (generates the dataset, runs, scores)

The agent copies the script's bytes into the container (as the agent user, through `exec`) and runs
`python3 /tmp/perception_agent.py --sandbox /app`; the script writes /app/answer.json as it goes.
"""
from __future__ import annotations

import base64
import sys
import time
from pathlib import Path

from video_arena import paths, progress
from video_arena.harbor_api import trials as TR
from video_arena.toolkit_info import toolkit_provenance
from video_arena.container_host.docker_host import ensure_docker
from video_arena.harbor.generate import Options, generate
from video_arena.container_host.image import image_exists
from video_arena.harbor import oracle_check as OC
from video_arena.harbor import spec as S
from video_arena.scoring.harbor_jobs import score_any

SCRIPT = Path(__file__).resolve().parent / "perception_agent.py"
AGENT = "agents.perception_agent:PerceptionAgent"

try:  # Harbor is only needed for the Harbor run itself
    from video_arena.harbor_api.agents import BaseAgent
except ImportError:  # pragma: no cover - the class is unusable without Harbor, and unused
    BaseAgent = object  # type: ignore[assignment,misc]


class PerceptionAgent(BaseAgent):  # type: ignore[misc,valid-type]
    def __init__(self, *args, timeout: int = 3600, **kwargs):
        super().__init__(*args, **kwargs)
        self.timeout = int(timeout)

    @staticmethod
    def name() -> str:
        return "video-arena-perception"

    def version(self) -> str | None:
        return str(toolkit_provenance().get("toolkit_version"))

    async def setup(self, environment) -> None:
        return None

    async def run(self, instruction, environment, context) -> None:
        b64 = base64.b64encode(SCRIPT.read_bytes()).decode()
        res = await environment.exec(f"echo {b64} | base64 -d > /tmp/perception_agent.py", timeout_sec=60)
        if res.return_code != 0:
            raise RuntimeError(f"cannot copy the agent into the container: {(res.stdout or '')[-300:]}")
        res = await environment.exec("cd /app && python3 /tmp/perception_agent.py --sandbox /app",
                                     timeout_sec=self.timeout)
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        (self.logs_dir / "perception.log").write_text((res.stdout or "") + (res.stderr or ""))
        context.metadata = {"return_code": res.return_code}


def run_perception_on_harbor(out: Path, games: list[str], limit: int | None, tasks_root: Path) -> str:
    """Generate a Protocol B dataset (--net docker), run the agent on it, score the job; a note line."""
    ok, why = ensure_docker(echo=lambda *_: None)
    if not ok:
        return f"Harbor run not made: Docker is not usable ({why})."
    if not image_exists(S.DEFAULT_BASE_IMAGE):
        return f"Harbor run not made: the image {S.DEFAULT_BASE_IMAGE} is not built (`video-arena image build`)."
    media_root = paths.media_root(tasks_root)
    dataset = out / "dataset-b"
    res = generate(Options(out=dataset, protocol="B", net="docker", media="mount", tasks_root=tasks_root,
                           games=games, limit=limit, force=True, progress=False))
    if res.missing_media:
        return f"Harbor run not made: {len(res.missing_media)} videos missing (e.g. {res.missing_media[0]})."
    job = f"perception-{time.strftime('%Y%m%d-%H%M%S')}"
    import os

    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(paths.REPO_ROOT), old]))
    try:  # a trial's result.json appears when it ends
        with progress.bar(len(res.tasks), "harbor", "trial") as bar, \
                progress.watch(bar, lambda: TR.finished_trials(out / "jobs" / job)):
            rc = OC.run_harbor(dataset, AGENT, job, out / "jobs", media_root, n_concurrent=2)
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
    if rc != 0:
        print(f"baselines: harbor run exited {rc}", file=sys.stderr)
    system = score_any(out / "jobs" / job, tasks_root, progress=False)
    parts = []
    for g in games:
        gs = system.games.get(g)
        if gs is not None and gs.means.get("t1_f1") is not None:
            parts.append(f"{g} T1 {gs.means['t1_f1']:.3f} (n={gs.n['t1_f1']})")
    return ("Harbor (`--harbor`, Protocol B dataset with `--net docker`, agent "
            f"`{AGENT}`): " + ("; ".join(parts) or "no trial scored") + ".")
