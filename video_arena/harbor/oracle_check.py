"""`video-arena oracle-check`: the project's main job on its built-in cases, end to end on real Docker.

    video-arena oracle-check                 # 1 case per game, both protocols
    video-arena oracle-check --render-media  # also re-render every built-in video (build-cases
                                             # --media-only, checked against the manifests): the trials'
                                             # videos first while the image builds, the others under nice
                                             # while the trials run: the README's main job
    video-arena oracle-check --all           # every case
    video-arena oracle-check --limit 3 --protocols B -n 4
    video-arena oracle-check --runtime podman    # copy-mode datasets on Harbor's podman environment, plus a
                                             # network probe from inside a trial

1. makes Docker usable (starts the daemon, links the compose plugin: `video-arena docker`);
2. builds the sandbox image, or reuses it when present (`video-arena image build`);
3. generates Protocol A and B datasets with --net compose-none (mount media) and validates them offline;
4. runs `harbor run -a oracle` and then `harbor run -a nop` on each dataset;
5. reads every trial's result.json and prints a table.

It passes only if every oracle trial has 1.0 on all four reward keys, the answer state `wrote` and
no agent/exit-code.txt (solve.sh also checks that the video and, for B, the task text reached the
sandbox), and every nop trial has 0.0 on all four keys, the answer state `never_wrote` (the seed
reached /app/answer.json) and no exception. Exit status 1 otherwise, 2 when the machinery
(Docker, the image, generation) could not even start.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from concurrent.futures import ThreadPoolExecutor

from video_arena import paths, progress
from video_arena.core.judge_loader import load_judge
from video_arena.harbor_api import trials as TR
from video_arena.harbor_api.version import install_hint
from video_arena.harbor import spec as S
from video_arena.cli_args import comma_list
from video_arena.container_host.runtimes import RUNTIMES, RuntimeUnusable
from video_arena.container_host.docker_host import ensure_docker
from video_arena.container_host.image import build_image, image_exists

REWARD_KEYS = load_judge().REWARD_KEYS
EXPECTED = {"oracle": 1.0, "nop": 0.0}


@dataclass
class TrialCheck:
    """One trial (video_arena/harbor_api/trials.py `Trial`) judged against what its agent must score."""
    agent: str
    protocol: str
    trial: str
    task: str
    rewards: dict[str, Any] | None
    exception: str | None
    exit_code: str | None
    answer_state: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def harbor_executable() -> str:
    here = Path(sys.executable).parent / "harbor"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    found = shutil.which("harbor")
    if not found:
        raise FileNotFoundError(f"the `harbor` command is not installed ({install_hint()})")
    return found


def harbor_env(media_root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # otherwise every harbor call waits on a GitHub download
    env[S.MEDIA_ENV] = str(media_root)
    return env


#: the CPU override this host needs (spec.cpu_override_args); a name of this module the tests replace
resource_args = S.cpu_override_args


def run_harbor(dataset: Path, agent: str, job_name: str, jobs_dir: Path, media_root: Path,
               n_concurrent: int = 2, timeout: float | None = None, to_log: bool = False,
               env_type: str = "docker", extra: tuple[str, ...] = ()) -> int:
    """`harbor run` of one agent on one dataset.  Its output goes to jobs/<job>.harbor-output.log when
    `to_log` (jobs running side by side) or a progress bar is on the terminal (Harbor's live display
    would fight it); the log's end is printed if it fails.  `env_type`: a row of the runtime table
    (video_arena/container_host/runtimes.py), which says what `harbor run` is given to use it."""
    runtime = RUNTIMES[env_type]
    cmd = [harbor_executable(), "run", "-p", str(dataset), "-a", agent, "-n", str(n_concurrent), "-y",
           "--job-name", job_name, "-o", str(jobs_dir), *resource_args(), *extra, *runtime.harbor_args]
    env = runtime.harbor_env(harbor_env(media_root))
    bar = progress.current()
    drawing = bar is not None and bar.drawing
    if not (to_log or drawing):  # Harbor's own output goes where ours goes
        print("$ " + " ".join(cmd), flush=True)
        return subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, timeout=timeout).returncode
    say = bar.write if drawing else (lambda text, file=None: print(text, file=file, flush=True))
    log = jobs_dir / f"{job_name}.harbor-output.log"
    jobs_dir.mkdir(parents=True, exist_ok=True)
    say("$ " + " ".join(cmd) + f"  > {log}")
    with open(log, "wb") as fh:
        rc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=fh,
                            stderr=subprocess.STDOUT, timeout=timeout).returncode
    if rc != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
        say("\n".join([f"harbor run exited {rc}; the end of {log}:", *tail]), file=sys.stderr)
    return rc


def read_trials(job_dir: Path, agent: str, protocol: str) -> list[TrialCheck]:
    """Every trial of a finished job (read by video_arena/harbor_api/trials.py), judged against what
    `agent` must score."""
    out = []
    for trial in TR.read_job(job_dir):
        if trial.result is None:
            out.append(TrialCheck(agent, protocol, trial.name, "?", None, trial.error, None,
                                  problems=[trial.error]))
            continue
        info = trial.exception_info
        exc = None
        if info:
            exc = f"{info.get('exception_type')}: {str(info.get('exception_message', ''))[:200]}"
        # the dataset's verifier's own record: was /app/answer.json the seed, an answer, or missing?
        t = TrialCheck(agent, protocol, trial.name, trial.task_name, trial.rewards, exc, trial.exit_code,
                       answer_state=trial.judge_answer_state)
        code_file = trial.agent_dir / "exit-code.txt"
        want_state = {"oracle": "wrote", "nop": "never_wrote"}[agent]
        if t.answer_state != want_state:
            t.problems.append(f"answer_state {t.answer_state!r}, expected {want_state!r}"
                              + (" (the answer seed did not reach /app/answer.json)" if agent == "nop" else ""))
        want = EXPECTED[agent]
        if exc:
            t.problems.append(f"exception {exc}")
        if t.rewards is None:
            t.problems.append("no reward (verifier_result is empty)")
        else:
            for k in REWARD_KEYS:
                if t.rewards.get(k) != want:
                    t.problems.append(f"{k}={t.rewards.get(k)!r}, expected {want}")
        if agent == "oracle" and t.exit_code is not None:
            t.problems.append(f"solve.sh exited {t.exit_code} (see {code_file.parent / 'oracle.txt'})")
        out.append(t)
    return out


def print_table(trials: list[TrialCheck]) -> None:
    keys = " ".join(f"{k.split('_macro')[0]:>6}" for k in REWARD_KEYS)  # the judge's keys, T2/T3 shortened
    head = f"{'agent':6} {'P':1} {'task':34} {keys} {'answer':11}  status"
    print(head)
    print("-" * len(head))
    for t in trials:
        r = t.rewards or {}
        vals = " ".join(f"{r.get(k, float('nan')):6.3f}" if isinstance(r.get(k), (int, float)) else f"{'-':>6}"
                        for k in REWARD_KEYS)
        status = "ok" if t.ok else "FAIL: " + "; ".join(t.problems)
        print(f"{t.agent:6} {t.protocol:1} {t.task[:34]:34} {vals} {str(t.answer_state or '-'):11}  {status}")


def check_jobs(datasets: dict[str, Path], jobs_dir: Path, stamp: str, media_root: Path,
               n_concurrent: int, agents: tuple[str, ...] = ("oracle", "nop"),
               show_progress: bool = True, side_by_side: bool = True, env_type: str = "docker") -> list[TrialCheck]:
    """Run every agent on every dataset; returns the judged trials (missing trials are failures).
    With `side_by_side` the jobs (agent x protocol) run at the same time, each `harbor run -n n_concurrent`:
    a trial mostly waits on Docker, so on 2 cores four jobs take about as long as one."""

    n_tasks = {p: sum(1 for t in d.iterdir() if (t / "task.toml").is_file()) for p, d in datasets.items()}
    jobs = [(protocol, dataset, agent) for protocol, dataset in datasets.items() for agent in agents]
    parallel = side_by_side and len(jobs) > 1
    # one bar over every trial of every job; Harbor writes a trial's result.json when the trial ends
    with progress.bar(sum(n_tasks.values()) * len(agents), "oracle-check", "trial", enabled=show_progress) as bar, \
            progress.watch(bar, lambda: sum(TR.finished_trials(j) for j in jobs_dir.glob(f"va-*-{stamp}"))):

        def one(job_spec):
            protocol, dataset, agent = job_spec
            job = f"va-{agent}-{protocol.lower()}-{stamp}"
            if not parallel:
                bar.set_postfix(f"{agent} {protocol}")
            rc = run_harbor(dataset, agent, job, jobs_dir, media_root, n_concurrent, to_log=parallel,
                            env_type=env_type)
            got = read_trials(jobs_dir / job, agent, protocol)
            if rc != 0:
                got.append(TrialCheck(agent, protocol, "-", "(harbor run)", None, f"harbor run exited {rc}", None,
                                 problems=[f"harbor run exited {rc}"]))
            if sum(1 for t in got if t.trial != "-") != n_tasks[protocol]:
                got.append(TrialCheck(agent, protocol, "-", "(job)", None, None, None,
                                 problems=[f"{n_tasks[protocol]} tasks but {sum(1 for t in got if t.trial != '-')} "
                                           "trial results"]))
            return got

        if parallel:
            bar.set_postfix(f"{len(jobs)} jobs side by side")
            with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
                results = list(pool.map(one, jobs))
        else:
            results = [one(j) for j in jobs]
    return [t for got in results for t in got]


def side_by_side(env_type: str, one_job_at_a_time: bool) -> bool:
    """Whether the jobs run side by side: where the runtime allows it (runtimes.py: Docker yes, Podman
    never), unless asked not to."""
    return not one_job_at_a_time and RUNTIMES[env_type].side_by_side


def network_probe(dataset: Path, jobs_dir: Path, stamp: str, media_root: Path, env_type: str) -> TrialCheck:
    """One trial of the first task with the NetProbe agent (video_arena/container_host/netprobe.py): ok only when
    the sandbox has no interface but lo, no route, and every TCP/DNS/UDP attempt failed."""
    # deferred: a Harbor agent, imports Harbor (about 1.1 s of CPU)
    from video_arena.container_host.netprobe import offline

    first = sorted(t.name for t in dataset.iterdir() if (t / "task.toml").is_file())[0]
    job = f"va-netprobe-{stamp}"
    rc = run_harbor(dataset, "video_arena.container_host.netprobe:NetProbe", job, jobs_dir, media_root, 1,
                    to_log=True, env_type=env_type, extra=("-i", first))
    docs = [json.loads(p.read_text()) for p in (jobs_dir / job).glob("*/agent/netprobe.json")]
    if rc != 0 or len(docs) != 1:
        return TrialCheck("probe", "-", job, first, None, f"harbor run exited {rc}, {len(docs)} probe records", None,
                     problems=[f"the probe trial did not run (exit {rc}, {len(docs)} records)"])
    ok, why = offline(docs[0].get("record"))
    return TrialCheck("probe", "-", job, first, None, why, None, problems=[] if ok else [f"network reachable: {why}"])


def docker_and_image(tag: str, rebuild: bool) -> int:
    """Steps 1 and 2: Docker usable, the image built or reused; 0, or 2 with the reason on stderr."""
    ok, why = ensure_docker(echo=print)
    if not ok:
        print(f"oracle-check: Docker is not usable: {why}", file=sys.stderr)
        return 2
    print(f"docker: {why}", flush=True)
    if rebuild or not image_exists(tag):
        try:
            build_image(tag=tag, reuse=not rebuild)
        except Exception as exc:
            print(f"oracle-check: cannot build {tag}: {exc}", file=sys.stderr)
            return 2
    else:
        print(f"image: reusing {tag}", flush=True)
    return 0


MEDIA_LOG = Path(".cache") / "oracle-check-media.log"
IMAGE_LOG = Path(".cache") / "oracle-check-image.log"


@dataclass
class MediaJob:
    """`--render-media` in two parts: the videos the trials need, rendered first in the foreground, and
    the others, rendered by a child process (under nice, so the trials keep the CPU they need) while the
    image is built and the trials run; the job passes only when both parts match their manifests."""
    tasks_root: Path | None
    trial: list[tuple[str, str]]
    other: list[tuple[str, str]]
    proc: subprocess.Popen | None = None
    started: float = 0.0
    log: Path = field(default_factory=lambda: paths.REPO_ROOT / MEDIA_LOG)

    def args(self, cases: list[tuple[str, str]], no_progress: bool) -> list[str]:
        """build-cases' arguments for these (game, case id) pairs: only their games, only their cases."""
        games = ",".join(dict.fromkeys(g for g, _ in cases))
        return (["--media-only", "--games", games, "--case-ids", ",".join(c for _, c in cases)]
                + (["--no-progress"] if no_progress else [])
                + (["--tasks-root", str(self.tasks_root)] if self.tasks_root else []))

    def start_others(self) -> None:
        """The remaining videos in a child process at a lower priority, its output to MEDIA_LOG."""
        if not self.other:
            return
        self.log.parent.mkdir(parents=True, exist_ok=True)
        code = ("import os, sys\nos.nice(10)\nfrom video_arena.cases import build as B\n"
                f"sys.exit(B.main({self.args(self.other, True)!r}))\n")
        with open(self.log, "w", encoding="utf-8") as fh:
            self.proc = subprocess.Popen([sys.executable, "-c", code], stdout=fh, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=paths.REPO_ROOT)
        self.started = time.monotonic()
        print(f"media: the other {len(self.other)} videos render in the background, under nice, while the "
              f"image is built and the trials run (log: {self.log})", flush=True)

    def finish(self) -> int:
        """Wait for the background part; its per-game lines printed; 0, or 1 when a video failed or differs."""
        if self.proc is None:
            return 0
        rc = self.proc.wait()
        lines = self.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        for line in lines:
            print(line, flush=True)
        print(f"media: the background part exited {rc}, {time.monotonic() - self.started:.0f} s after it started",
              flush=True)
        if rc:
            print("oracle-check: re-rendering the media failed or a video differs from its manifest (see above)",
                  file=sys.stderr)
        return 1 if rc else 0

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()


def plan_media(tasks_root: Path | None, games: str | None, limit: int | None) -> MediaJob:
    """Which videos the trials need (the cases make-harbor takes) and which others --render-media renders."""
    from video_arena.harbor.generate import plan_cases  # deferred with generate (Harbor's models)

    root = paths.tasks_root(tasks_root)
    names = comma_list(games) if games else None
    trial = set(plan_cases(root, names, limit)[0])
    every = plan_cases(root, names, None)[0]
    return MediaJob(tasks_root, [gc for gc in every if gc in trial], [gc for gc in every if gc not in trial])


def render_media_while_building_image(tag: str, rebuild: bool, media: MediaJob, no_progress: bool = False) -> int:
    """Docker and the image in a child process logging to .cache/oracle-check-image.log (it waits mostly
    on apt and the disk); meanwhile `build-cases --media-only` of the trials' videos in the foreground (its
    progress bar and per-game lines), then the other videos started in the background (MediaJob). Returns
    when the image is ready: 0, 2 when it failed, 1 when a trial's video failed or differs."""
    log = paths.REPO_ROOT / IMAGE_LOG
    log.parent.mkdir(parents=True, exist_ok=True)
    code = ("import sys\nfrom video_arena.harbor.oracle_check import docker_and_image\n"
            f"sys.exit(docker_and_image({tag!r}, {rebuild!r}))\n")
    with open(log, "w", encoding="utf-8") as fh:
        image_proc = subprocess.Popen([sys.executable, "-c", code], stdout=fh, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, cwd=paths.REPO_ROOT)
    print(f"image: building {tag} in the background (log: {log})", flush=True)
    # deferred: the renderers (about 0.9 s of CPU); only --render-media
    from video_arena.cases import build as B

    t0 = time.monotonic()
    try:
        media_rc = B.main(media.args(media.trial, no_progress))
        print(f"media: the trials' {len(media.trial)} videos: build-cases --media-only exited {media_rc} after "
              f"{time.monotonic() - t0:.0f} s", flush=True)
        if media_rc == 0:
            media.start_others()
        t1 = time.monotonic()
        image_rc = image_proc.wait()
    except BaseException:
        image_proc.terminate()
        media.stop()
        raise
    tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    print(f"image: done {time.monotonic() - t1:.0f} s after the trials' media (exit {image_rc}); "
          f"{tail[-1] if tail else 'no output'}", flush=True)
    if image_rc:
        media.stop()
        print("oracle-check: the image build failed; the end of its log:\n" + "\n".join(tail[-25:]), file=sys.stderr)
        return 2
    if media_rc:
        print("oracle-check: re-rendering the media failed or a video differs from its manifest (see above)",
              file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="video-arena oracle-check", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=1, metavar="N", help="cases per game (default 1)")
    ap.add_argument("--all", action="store_true", help="every case of every game")
    ap.add_argument("--games", default=None, help="comma-separated games (default: every game with cases)")
    ap.add_argument("--protocols", default="A,B", help="A, B or A,B (default)")
    ap.add_argument("--tasks-root", type=Path, default=None)
    ap.add_argument("--work", type=Path, default=None,
                    help="where the datasets and Harbor jobs go (default .cache/oracle-check/<time> in the checkout)")
    ap.add_argument("--image", default=S.DEFAULT_BASE_IMAGE, help="the sandbox image tag to build/reuse and run")
    ap.add_argument("--rebuild", action="store_true", help="build the image even if it exists")
    ap.add_argument("-n", "--n-concurrent", type=int, default=2, help="harbor run -n of each job (default 2)")
    ap.add_argument("--agents", default="oracle,nop", help="oracle, nop or oracle,nop (default)")
    ap.add_argument("--one-job-at-a-time", action="store_true",
                    help="run the jobs (agent x protocol) one after another instead of side by side")
    ap.add_argument("--render-media", action="store_true",
                    help="first re-render every built-in video from the committed ground truth and check it "
                         "against the manifest (build-cases --media-only), building the image meanwhile")
    ap.add_argument("--runtime", choices=tuple(RUNTIMES), default="docker",
                    help="the container runtime, as in `video-arena image --runtime` (Harbor's environment of "
                         "the same name): docker (mount-mode datasets, the default) or podman (copy-mode "
                         "datasets, the Docker-built image loaded into Podman, and a network probe trial)")
    ap.add_argument("--env", dest="old_env", help=argparse.SUPPRESS)  # the old name: a one-line error
    ap.add_argument("--no-progress", action="store_true", help="no progress bars (also: VA_NO_PROGRESS=1)")
    a = ap.parse_args(argv)
    if a.old_env is not None:
        print(f"oracle-check: --env is named --runtime now (--runtime {a.old_env})", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    protocols = [p.upper() for p in comma_list(a.protocols)]
    if not protocols or any(p not in S.PROTOCOLS for p in protocols):
        print(f"oracle-check: --protocols must be A, B or A,B, not {a.protocols!r}", file=sys.stderr)
        return 2
    agents = tuple(comma_list(a.agents))
    if not agents or any(x not in EXPECTED for x in agents) or len(set(agents)) != len(agents):
        print(f"oracle-check: --agents must be oracle, nop or oracle,nop, not {a.agents!r}", file=sys.stderr)
        return 2
    if a.n_concurrent < 1:
        print("oracle-check: -n must be >= 1", file=sys.stderr)
        return 2
    media = None
    if a.render_media:
        media = plan_media(a.tasks_root, a.games, None if a.all else a.limit)
        rc = render_media_while_building_image(a.image, a.rebuild, media, a.no_progress)
        if rc:
            return rc
        a.rebuild = False
    try:
        return _check(a, t0, protocols, agents, media)
    finally:
        if media is not None:
            media.stop()


def _check(a: argparse.Namespace, t0: float, protocols: list[str], agents: tuple[str, ...],
           media: MediaJob | None) -> int:
    """Steps 1 to 5 once the media the trials need are there (docs at the top of this module)."""

    rc = docker_and_image(a.image, a.rebuild)
    if rc:
        return rc
    runtime = RUNTIMES[a.runtime]
    try:
        for line in runtime.prepare(a.image):
            print(line, flush=True)
    except RuntimeUnusable as exc:
        print(f"oracle-check: {exc}", file=sys.stderr)
        return 2
    media_mode = runtime.media_mode

    # deferred: Harbor's models and lint (about 1.1 s of CPU); read_trials' users need neither
    from video_arena.harbor.generate import GenerateError, Options, generate
    from video_arena.harbor.validate import Validator, compose_available

    tasks_root = paths.tasks_root(a.tasks_root)
    media_root = paths.media_root(tasks_root)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    work = (a.work or paths.REPO_ROOT / ".cache" / "oracle-check" / stamp).resolve()
    games = comma_list(a.games) if a.games else None
    datasets: dict[str, Path] = {}
    for protocol in protocols:
        out = work / f"dataset-{protocol.lower()}"
        try:
            res = generate(Options(out=out, protocol=protocol, net="compose-none", media=media_mode, base_image=a.image,
                                   tasks_root=tasks_root, games=games, limit=None if a.all else a.limit,
                                   force=True, progress=not a.no_progress))
        except (GenerateError, FileNotFoundError, ValueError) as exc:
            print(f"oracle-check: cannot generate Protocol {protocol}: {exc}", file=sys.stderr)
            return 2
        print(f"generate {protocol}: {len(res.tasks)} tasks in {res.seconds:.1f} s", flush=True)
        if res.missing_media:
            print(f"oracle-check: {len(res.missing_media)} videos are missing under {media_root}, "
                  f"e.g. {res.missing_media[0]} (run `video-arena build-cases`)", file=sys.stderr)
            return 2
        tv = time.monotonic()
        reports, dproblems = Validator(tasks_root, compose_available()).check_dataset(out, progress=not a.no_progress)
        bad = [r for r in reports if not r.ok]
        print(f"validate {protocol}: {len(reports)} tasks in {time.monotonic() - tv:.1f} s", flush=True)
        if bad or dproblems:
            for p in dproblems:
                print(f"BAD dataset {out}: {p}")
            for r in bad:
                print(f"BAD {r.path}:\n    - " + "\n    - ".join(r.problems))
            return 1
        datasets[protocol] = out

    trials = check_jobs(datasets, work / "jobs", stamp, media_root, a.n_concurrent, agents=agents,
                        show_progress=not a.no_progress, side_by_side=side_by_side(a.runtime, a.one_job_at_a_time),
                        env_type=a.runtime)
    print()
    print_table(trials)
    failed = [t for t in trials if not t.ok]
    if runtime.network_probe:
        probe = network_probe(next(iter(datasets.values())), work / "jobs", stamp, media_root, a.runtime)
        print(f"network probe ({a.runtime}, from inside a trial): {'offline' if probe.ok else 'FAIL'}: "
              f"{probe.exception or 'no network'}")
        if not probe.ok:
            failed.append(probe)
    media_failed = media.finish() if media is not None else 0
    n = {ag: sum(1 for t in trials if t.agent == ag and t.trial != "-") for ag in EXPECTED}
    problems = len(failed) + media_failed
    verdict = "PASSED" if not problems else f"FAILED ({problems} problems{'; the media differ' if media_failed else ''})"
    print(f"oracle-check {verdict}: {n['oracle']} oracle and {n['nop']} nop trials over "
          f"{', '.join(protocols)} in {time.monotonic() - t0:.0f} s; jobs in {work / 'jobs'}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
