"""`video-arena publish`: a copy-mode dataset as a git repository plus a Harbor registry entry.

    video-arena make-harbor --out harbor/va-b --media copy --base-image REGISTRY/video-arena/base@sha256:<64 hex>
    video-arena publish harbor/va-b --version 1.0.0 --out published/          # file:// registry row
    harbor run -d video-arena-b@1.0.0 --registry-path published/registry.json -a oracle

Harbor consumes a registry dataset as rows of (git URL, commit, path): it clones the repository,
checks out the commit and copies the task folder. `publish` writes exactly that:

    REPO_DIR/                                 a git repository (created when missing)
        registry.json                         Harbor's registry format: one entry per NAME@VERSION
        datasets/NAME/VERSION/<task>/...      the task folders, byte copies of the dataset's
        datasets/NAME/VERSION/README.md       Harbor's adapter README sections
        datasets/NAME/VERSION/adapter_metadata.json, parity_experiment.json

The tasks are committed first; the registry rows name that commit, then registry.json is committed
on top.  A published NAME@VERSION is never replaced: publish a new version instead.

Refused (one line, exit 2): a folder make-harbor did not write, a mount-mode dataset (its compose
files bind-mount host paths that do not exist anywhere else), an unpinned base image unless
--allow-unpinned, a task whose video differs from the digest the generator recorded, a dataset the
offline validator rejects, and a NAME@VERSION the repository already holds.

`--jobs JOB ...` names Harbor job folders of this dataset (oracle, nop, or a model); their trials
fill adapter_metadata.json and parity_experiment.json: per agent the trial count, Harbor's mean
reward and the mean the project's scorer gets by re-judging every collected answer natively, and
the number of trials where the two disagree.  Without --jobs those files say that nothing was
measured, never a number.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from video_arena import paths
from video_arena.digests import sha256_file
from video_arena.core.tasks import TasksTree
from video_arena.harbor import spec as S
from video_arena.harbor_api.version import installed_version

REGISTRY_FILE = "registry.json"
#: The marker that says a repository was written by this command (so it may add versions to it).
REPO_MARKER = ".video-arena-publish.json"
NAME_RE = re.compile(r"\A[a-z0-9][a-z0-9._-]{0,99}\Z")
VERSION_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._+-]{0,63}\Z")
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "video-arena publish", "GIT_AUTHOR_EMAIL": "video-arena@localhost",
                "GIT_COMMITTER_NAME": "video-arena publish", "GIT_COMMITTER_EMAIL": "video-arena@localhost"}


class PublishError(RuntimeError):
    """The dataset cannot be published as asked; nothing was changed (the message says why)."""


@dataclass
class Published:
    repo: Path
    name: str
    version: str
    git_url: str
    commit: str
    registry_commit: str
    tasks: list[str]
    bytes_total: int
    bytes_media: int
    protocol: str
    runs: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


# --------------------------------------------------------------------------------------------------
# the dataset
# --------------------------------------------------------------------------------------------------
def read_marker(dataset: Path) -> dict[str, Any]:
    marker = dataset / S.DATASET_MARKER
    if not dataset.is_dir():
        raise PublishError(f"{dataset} is not a folder")
    try:
        doc = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PublishError(f"{dataset} is not a dataset written by make-harbor (no {S.DATASET_MARKER})") from None
    except (OSError, ValueError) as exc:
        raise PublishError(f"{marker} is unreadable: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != S.DATASET_FORMAT:
        raise PublishError(f"{marker} is not a {S.DATASET_FORMAT} marker")
    return doc


def check_publishable(dataset: Path, marker: dict[str, Any], allow_unpinned: bool) -> list[str]:
    """The task folder names to publish; raises PublishError for what cannot travel."""
    if marker.get("media") != "copy":
        raise PublishError(f"{dataset} is a --media {marker.get('media')} dataset: its compose files mount "
                           "videos from this host's paths, which a registry user does not have; regenerate "
                           "it with make-harbor --media copy")
    if marker.get("host_media"):
        raise PublishError(f"{dataset} pins host paths (--host-media); regenerate it with --media copy")
    if not marker.get("base_image_pinned") and not allow_unpinned:
        raise PublishError(f"{dataset}'s base image {marker.get('base_image')} is a tag, not a digest: another "
                           "host would run whatever the tag names there; push the image (video-arena image "
                           "push), regenerate with --base-image REGISTRY/NAME@sha256:..., or pass "
                           "--allow-unpinned for a registry used only where that tag is the same image")
    names = []
    if not isinstance(marker.get("tasks") or [], list):
        raise PublishError(f"{dataset}: the marker's tasks are not a list")
    for task in marker.get("tasks") or []:
        if not isinstance(task, str) or not task.startswith(S.TASK_ORG + "/"):
            raise PublishError(f"{dataset}: the marker lists a task {task!r} that is not {S.TASK_ORG}/<game>-<case>")
        names.append(task.split("/", 1)[1])
    if not names:
        raise PublishError(f"{dataset} holds no tasks")
    present = sorted(p.name for p in dataset.iterdir() if p.is_dir() and not p.name.startswith("."))
    if sorted(names) != present:
        extra = sorted(set(present) - set(names))
        lost = sorted(set(names) - set(present))
        raise PublishError(f"{dataset}: the task folders differ from the marker's list"
                           + (f"; not listed: {', '.join(extra[:3])}" if extra else "")
                           + (f"; missing: {', '.join(lost[:3])}" if lost else ""))
    for name in names:
        case = dataset / name / "tests" / "case.json"
        try:
            doc = json.loads(case.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise PublishError(f"{case} is unreadable: {exc}") from None
        if not isinstance(doc, dict):
            raise PublishError(f"{case} is not a JSON object")
        links = [p for p in (dataset / name).rglob("*") if p.is_symlink()]
        if links:
            raise PublishError(f"{links[0]} is a symbolic link; a published task holds only regular files")
        video = dataset / name / "environment" / "match.mp4"
        if not video.is_file() or video.is_symlink():
            raise PublishError(f"{video} is missing (a copy-mode task carries its video)")
        if sha256_file(video) != doc.get("media_sha256"):
            raise PublishError(f"{video} differs from the SHA-256 make-harbor recorded in {case}; regenerate the dataset")
    return names


def validate_dataset(dataset: Path, tasks_root: Path | None, progress: bool) -> None:
    from video_arena.harbor.validate import Validator, compose_available

    root = paths.tasks_root(tasks_root)
    reports, dproblems = Validator(root, compose_available()).check_dataset(dataset, progress=progress)
    bad = [r for r in reports if not r.ok]
    if bad or dproblems:
        first = dproblems[0] if dproblems else f"{bad[0].path.name}: {bad[0].problems[0]}"
        raise PublishError(f"the offline validator rejects {dataset} ({len(bad)} bad tasks"
                           f"{', dataset problems' if dproblems else ''}; first: {first}); "
                           f"see `video-arena validate {dataset}`")


# --------------------------------------------------------------------------------------------------
# measured runs -> the adapter files
# --------------------------------------------------------------------------------------------------
def summarise_job(job: Path, task_names: set[str], tasks_root: Path | None) -> dict[str, Any]:
    """One Harbor job of this dataset: per agent, trials, Harbor's mean reward, the natively re-judged
    mean and the disagreements (the scorer re-judges every collected answer with judge/judge.py)."""
    from video_arena.scoring.harbor_jobs import score_job
    from video_arena.scoring.cells import ScoringInputError

    if not (job / "config.json").is_file():
        raise PublishError(f"{job} is not a Harbor job folder (no config.json)")
    try:
        cfg = json.loads((job / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PublishError(f"{job}/config.json is unreadable: {exc}") from None
    if not isinstance(cfg, dict):
        raise PublishError(f"{job}/config.json is not a Harbor job config (a JSON object)")
    agents = [a.get("name") or a.get("import_path") or "?" for a in cfg.get("agents") or [] if isinstance(a, dict)]
    trials = []
    for rfile in sorted(job.glob("*/result.json")):
        try:
            res = json.loads(rfile.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # skipping it would understate n_trials in parity_experiment.json
            raise PublishError(f"{rfile} is unreadable ({exc}); a job still running, or a damaged trial: "
                               f"publish only finished jobs") from None
        if not isinstance(res, dict) or not isinstance(res.get("verifier_result") or {}, dict) \
                or not isinstance((res.get("verifier_result") or {}).get("rewards") or {}, dict):
            raise PublishError(f"{rfile} is not a Harbor trial result (a JSON object, its verifier_result and "
                               f"rewards objects)")
        tname = str(res.get("task_name") or "")
        if tname.split("/", 1)[-1] not in task_names:
            raise PublishError(f"{job}: trial {rfile.parent.name} ran {tname!r}, not a task of this dataset")
        trials.append(res)
    ran = sorted({str(t.get("task_name") or "").split("/", 1)[-1] for t in trials})
    if not trials:
        raise PublishError(f"{job} holds no finished trial")
    try:
        system = score_job(job, tasks_root, n_boot=0, progress=False)
    except ScoringInputError as exc:
        raise PublishError(f"cannot score {job}: {exc}") from None
    harbor_rewards = [float(((t.get("verifier_result") or {}).get("rewards") or {}).get("reward", 0.0))
                      for t in trials if (t.get("verifier_result") or {}).get("rewards")]
    scored = [c for c in system.cells() if getattr(c, "trial", None) and c.status == "scored"]
    native = [float(c.record["reward"]) for c in scored if c.record]
    facts = system.harbor or {}
    models = sorted({str(a.get("model_name")) for a in cfg.get("agents") or [] if isinstance(a, dict)
                     and a.get("model_name")})
    return {
        "job": job.name, "agent": ",".join(agents), "model": ",".join(models) or None,
        "n_trials": len(trials), "n_tasks": len(ran), "n_scored": len(scored),
        "n_missing": len(facts.get("missing") or []),
        "harbor_mean_reward": round(sum(harbor_rewards) / len(harbor_rewards), 6) if harbor_rewards else None,
        "native_mean_reward": round(sum(native) / len(native), 6) if native else None,
        "n_reward_checked": facts.get("reward_checked", 0),
        "n_reward_mismatches": len(facts.get("mismatches") or []),
        "harbor_version": _harbor_version(),
    }


def _harbor_version() -> str | None:
    return installed_version()


def _game_licences(games: list[str], tasks_root: Path | None) -> dict[str, str]:
    tree = TasksTree(paths.tasks_root(tasks_root))
    out = {}
    for g in games:
        try:
            doc = tree.read_manifest(g)
        except ValueError:
            doc = None
        out[g] = str(doc.get("licence") or (doc.get("provenance") or {}).get("licence")
                     or "not recorded in the manifest") if doc is not None \
            else "not recorded (no manifest in the tasks tree)"
    return out


def adapter_files(name: str, version: str, marker: dict[str, Any], tasks: list[str], sizes: dict[str, int],
                  runs: list[dict[str, Any]], git_url: str, licences: dict[str, str]) -> dict[str, str]:
    protocol = marker.get("protocol")
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    games = sorted({t.rsplit("-", 1)[0] for t in tasks})
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        by_agent.setdefault(r["agent"], []).append(r)
    counts = {a: sum(r["n_trials"] for r in rs) for a, rs in by_agent.items()}
    mismatches = sum(r["n_reward_mismatches"] for r in runs)
    checked = sum(r["n_reward_checked"] for r in runs)
    parity_note = (f"{checked} trials re-judged natively, {mismatches} disagree with Harbor's reward"
                   if runs else "no run recorded (publish --jobs JOB ...)")
    metadata = [{
        "adapter_name": name,
        "adapter_builders": [],
        "original_benchmark": [{
            "split": "test", "size": len(tasks), "harness": "video-arena (native runners run-a / run-b)",
            "supported_agents": None, "adaptable": True,
            "notes": f"Protocol {protocol}; games: {', '.join(games)}",
        }],
        "harbor_adapter": [{
            "split": "test",
            "adapted_benchmark_size": len(tasks),
            "parity_benchmark_size": max((r["n_tasks"] for r in runs), default=None),
            "parity_sampling_rate": (round(max(r["n_tasks"] for r in runs) / len(tasks), 4) if runs else None),
            "registry_benchmark_size": len(tasks),
            "added_agents": ["protocol_a_agent:ProtocolA"] if protocol == "A" else [],
            "parity_matching_agents": sorted(a for a, rs in by_agent.items()
                                             if not any(r["n_reward_mismatches"] for r in rs)),
            "parity_unmatching_agents": sorted(a for a, rs in by_agent.items()
                                               if any(r["n_reward_mismatches"] for r in rs)) or None,
            "parity_costs": None,
            "notes": (f"{name}@{version}: {len(tasks)} copy-mode tasks, {sizes['total']} bytes "
                      f"({sizes['media']} of video); base image {marker.get('base_image')}"
                      f"{'' if marker.get('base_image_pinned') else ' (a tag, not pinned)'}; --net {marker.get('net')}; "
                      f"trials: {', '.join(f'{a} {n}' for a, n in sorted(counts.items())) or 'none recorded'}; "
                      f"parity: {parity_note}"),
        }],
    }]
    parity = []
    for agent, rs in sorted(by_agent.items()):
        parity.append({
            "adapter_name": name, "agent": agent, "model": rs[0]["model"], "date": today,
            "adapted_benchmark_size": len(tasks), "parity_benchmark_size": max(r["n_tasks"] for r in rs),
            "number_of_runs": len(rs),
            "notes": ("original = the project's own scorer (video-arena score: judge/judge.py re-run on each "
                      "collected answer), harbor = the verifier's reward.json in the same trial; "
                      f"{sum(r['n_reward_checked'] for r in rs)} trials checked, "
                      f"{sum(r['n_reward_mismatches'] for r in rs)} disagree"),
            "original_parity_repo": None, "adapter_pr": [], "dataset_pr": [], "parity_pr": [],
            "metrics": [{
                "benchmark_name": "Video-Arena", "metric": "reward",
                "original": _mean_str([r["native_mean_reward"] for r in rs]),
                "harbor": _mean_str([r["harbor_mean_reward"] for r in rs]),
                "original_runs": [r["native_mean_reward"] for r in rs],
                "harbor_runs": [r["harbor_mean_reward"] for r in rs],
            }],
            "runs": rs,
        })
    if not parity:
        parity.append({"adapter_name": name, "measured": False,
                       "notes": "no Harbor job of this dataset was given to publish (--jobs): nothing measured"})
    readme = _readme(name, version, marker, tasks, games, sizes, runs, git_url, licences, parity_note)
    return {"README.md": readme,
            "adapter_metadata.json": json.dumps(metadata, indent=2) + "\n",
            "parity_experiment.json": json.dumps(parity, indent=2) + "\n"}


def _mean_str(values: list[float | None]) -> str | None:
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    m = sum(vals) / len(vals)
    if len(vals) < 2:
        return f"{m:.4f} (1 run)"
    sem = (sum((v - m) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5 / len(vals) ** 0.5
    return f"{m:.4f} +/- {sem:.4f}"


def _readme(name, version, marker, tasks, games, sizes, runs, git_url, licences, parity_note) -> str:
    protocol = marker.get("protocol")
    agent_hint = ("-a protocol_a_agent:ProtocolA -m openai/<model>" if protocol == "A"
                  else "-a terminus-2 -m <provider/model> --ak max_turns=200")
    rows = "\n".join(f"| {r['job']} | {r['agent']} | {r['n_trials']} | {r['harbor_mean_reward']} | "
                     f"{r['native_mean_reward']} | {r['n_reward_mismatches']} |" for r in runs) \
        or "| (none recorded) | | | | | |"
    lic = "\n".join(f"- **{g}**: {licences[g]}" for g in games)
    return f"""## Video-Arena (Protocol {protocol}) -> Harbor Adapter

## Overview

Video-Arena is a long-video game benchmark: a model watches a whole HUD-free match and reports every
critical event (T1), how each event moved a hidden game state V_t (T2) and where that leaves the match
(T3). This dataset, `{name}@{version}`, holds {len(tasks)} Protocol {protocol} tasks (one per match) over
the games {', '.join(games)}; each is scored by the same stdlib judge as the project's native runners.

## Generated Task Structure

```
<game>-<case_id>/
    task.toml           budget, separate root verifier, agent user `agent`, artifact /app/answer.json
    instruction.md
    environment/        Dockerfile (FROM {marker.get('base_image')}), match.mp4, answer.json (the empty seed){', instruction.md' if protocol == 'B' else ''}{', docker-compose.yaml (network_mode: none)' if marker.get('net') == 'docker' else ''}
    tests/              test.sh, score_harbor.py, judge.py, gt.json, case.json (verifier only)
    solution/           solve.sh, answer.json (oracle only)
```

Copy mode: the video is baked into each task's image, so the tasks need no host path and run on any
Harbor environment that builds a Dockerfile. Size: {sizes['total']} bytes, of which {sizes['media']} bytes of video.

## Run Evaluation / Harness

```bash
harbor run -d {name}@{version} --registry-path registry.json -a oracle          # every trial 1.0
harbor run -d {name}@{version} --registry-path registry.json {agent_hint} -e <docker|podman|daytona|modal|...> -n <N>
harbor job resume -p jobs/<job>                                                  # after an interruption
```

The registry rows point at `{git_url}`.

## Comparison with Original Benchmark (Parity)

"Original" is the project's own scorer (`video-arena score`, which re-runs the judge on every
collected answer); "Harbor" is the verifier's `reward.json` of the same trial. {parity_note}.

| job | agent | trials | Harbor mean reward | native mean reward | disagreements |
|---|---|---|---|---|---|
{rows}

## Notes & Caveats

- The network: `--net {marker.get('net')}`{' (compose `network_mode: none`, for Docker/Podman hosts without Harbor egress control; cloud environments need a --net strict dataset)' if marker.get('net') == 'docker' else ' (`[environment] network_mode = "no-network"`: the environment must enforce it)'}.
- The base image is {'pinned by digest' if marker.get('base_image_pinned') else 'a tag, not a digest: only hosts where that tag is the same image run the same bits'}.
- Each trial asks for {S.CPUS} CPUs and {S.MEMORY_MB} MB; a smaller host needs `--override-cpus`, which is a smaller budget than the benchmark's.
- Report the mean of the per-game means with n; a trial that ends in a harness exception is missing, not 0.0.
- This repository holds each task's ground truth (`tests/gt.json`) and oracle answer (`solution/`), as every
  Harbor dataset does: Harbor never puts them in the agent's container, but an agent that can browse the web
  could fetch them from wherever the repository is hosted. Evaluate with the network off for agents, or host
  the repository where evaluated agents cannot reach it.

## Citation

Cite the Video-Arena toolkit and, per game, the sources of its matches (below).

## Licences of the matches

{lic}
"""


# --------------------------------------------------------------------------------------------------
# git
# --------------------------------------------------------------------------------------------------
def _git(repo: Path, *args: str, capture: bool = True) -> str:
    env = dict(os.environ)
    for k, v in GIT_IDENTITY.items():
        env.setdefault(k, v)
    p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        last = ((p.stderr or p.stdout).strip().splitlines() or ["no output"])[-1]
        raise PublishError(f"git {' '.join(args[:2])} failed in {repo}: {last}")
    return p.stdout.strip()


def _load_registry(repo: Path) -> list[dict[str, Any]]:
    path = repo / REGISTRY_FILE
    if not path.exists():
        return []
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PublishError(f"{path} is unreadable: {exc}") from None
    if not isinstance(rows, list):
        raise PublishError(f"{path} is not a Harbor registry (a JSON list of datasets)")
    return rows


def _tree_bytes(root: Path) -> tuple[int, int]:
    total = media = 0
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            n = p.stat().st_size
            total += n
            if p.name == "match.mp4":
                media += n
    return total, media


def publish(dataset: Path, version: str, out: Path, git_url: str | None = None, name: str | None = None,
            allow_unpinned: bool = False, jobs: list[Path] | None = None, tasks_root: Path | None = None,
            validate: bool = True, progress: bool = True) -> Published:
    t0 = time.monotonic()
    if shutil.which("git") is None:
        raise PublishError("git is not installed (apt-get install git)")
    dataset = dataset.expanduser().resolve()
    marker = read_marker(dataset)
    protocol = str(marker.get("protocol"))
    name = name or f"video-arena-{protocol.lower()}"
    if not NAME_RE.fullmatch(name):
        raise PublishError(f"--name {name!r}: Harbor's registry names are bare (lowercase letters, digits, . _ -; "
                           "no '/', which Harbor reads as a package)")
    if not VERSION_RE.fullmatch(version or ""):
        raise PublishError(f"--version {version!r}: use letters, digits and . _ + - (e.g. 1.0.0)")
    tasks = check_publishable(dataset, marker, allow_unpinned)
    out = Path(os.path.abspath(out.expanduser()))
    if out == dataset or dataset in out.parents or out in dataset.parents:
        raise PublishError(f"--out {out} overlaps the dataset {dataset}")
    fresh = not out.exists()
    if not fresh:
        if not out.is_dir():
            raise PublishError(f"--out {out} exists and is not a folder")
        if any(out.iterdir()) and not (out / REPO_MARKER).is_file():
            raise PublishError(f"--out {out} exists and was not written by video-arena publish (no {REPO_MARKER}); "
                               "choose a new folder")
    rows = _load_registry(out) if not fresh else []
    if any(r.get("name") == name and r.get("version") == version for r in rows if isinstance(r, dict)):
        raise PublishError(f"{name}@{version} is already published in {out}; a published version is never "
                           "replaced: choose a new --version")
    if validate:
        validate_dataset(dataset, tasks_root, progress)
    runs = [summarise_job(Path(j).expanduser().resolve(), set(tasks), tasks_root) for j in (jobs or [])]
    git_url = git_url or out.as_uri()

    rel_base = Path("datasets") / name / version
    if fresh:  # a new repository is built beside --out and renamed into place when complete
        out.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
        _git(work, "init", "-q")
        _git(work, "config", "uploadpack.allowFilter", "true")
        (work / REPO_MARKER).write_text(json.dumps({"format": "video-arena-publish/1"}) + "\n")
        (work / ".gitattributes").write_text("*.mp4 binary\n")
        head_before = None
    else:
        work = out
        if _git(work, "status", "--porcelain"):
            raise PublishError(f"{out} has uncommitted changes; commit or discard them first")
        head_before = _git(work, "rev-parse", "HEAD")
    target = work / rel_base
    try:
        if target.exists():
            raise PublishError(f"{target} already exists in {out}")
        for t in tasks:
            shutil.copytree(dataset / t, target / t, symlinks=True)
        total, media = _tree_bytes(target)
        sizes = {"total": total, "media": media}
        licences = _game_licences(sorted({t.rsplit("-", 1)[0] for t in tasks}), tasks_root)
        for fname, text in adapter_files(name, version, marker, tasks, sizes, runs, git_url, licences).items():
            (target / fname).write_text(text, encoding="utf-8")
        _git(work, "add", "-A")
        # the tasks whatever ignore rules say (a .gitignore inside a task, the user's global excludes file),
        # with their executable bits and their bytes as they are
        _git(work, "-c", "core.fileMode=true", "-c", "core.autocrlf=false", "add", "--force", "--", rel_base.as_posix())
        _git(work, "commit", "-q", "-m", f"publish {name}@{version}: {len(tasks)} Protocol {protocol} tasks")
        commit = _git(work, "rev-parse", "HEAD")
        _check_commit(work, commit, rel_base, target)
        from video_arena.harbor_api.registry import DatasetSpec

        entry = {"name": name, "version": version,
                 "description": (f"Video-Arena Protocol {protocol}: {len(tasks)} long-video game tasks "
                                 f"(copy mode, base image {marker.get('base_image')}, --net {marker.get('net')})"),
                 "tasks": [{"name": f"{S.TASK_ORG}/{t}", "git_url": git_url, "git_commit_id": commit,
                            "path": (rel_base / t).as_posix()} for t in tasks],
                 "metrics": []}
        DatasetSpec.model_validate(entry)
        rows = [r for r in rows] + [entry]
        (work / REGISTRY_FILE).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        _check_registry(work / REGISTRY_FILE, name, version, len(tasks))
        _git(work, "add", REGISTRY_FILE)
        _git(work, "commit", "-q", "-m", f"registry: {name}@{version} at {commit[:12]}")
        registry_commit = _git(work, "rev-parse", "HEAD")
        if fresh:
            os.rename(work, out)
    except BaseException:
        if fresh:
            shutil.rmtree(work, ignore_errors=True)
        elif head_before:
            subprocess.run(["git", "-C", str(work), "reset", "-q", "--hard", head_before], capture_output=True)
            subprocess.run(["git", "-C", str(work), "clean", "-qfdx"], capture_output=True)
        raise
    return Published(repo=out, name=name, version=version, git_url=git_url, commit=commit,
                     registry_commit=registry_commit, tasks=tasks, bytes_total=total, bytes_media=media,
                     protocol=protocol, runs=runs, seconds=time.monotonic() - t0)


def _check_commit(repo: Path, commit: str, rel_base: Path, target: Path) -> None:
    """The commit the registry rows will name holds exactly the files copied from the validated dataset,
    byte for byte and with their executable bits: what Harbor clones is what was validated."""
    listing = _git(repo, "ls-tree", "-r", "-z", commit, "--", rel_base.as_posix())
    committed = {}
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, _kind, blob = meta.split()
        committed[path] = (mode, blob)
    files = sorted(p for p in target.rglob("*") if p.is_file() and not p.is_symlink())
    rels = [(rel_base / p.relative_to(target)).as_posix() for p in files]
    p = subprocess.run(["git", "-C", str(repo), "hash-object", "--no-filters", "--stdin-paths"],
                       input="".join(f"{f}\n" for f in files), capture_output=True, text=True)
    blobs = p.stdout.split()
    if p.returncode != 0 or len(blobs) != len(files):
        raise PublishError(f"git hash-object failed in {repo}: {(p.stderr.strip().splitlines() or ['no output'])[-1]}")
    for f, rel, blob in zip(files, rels, blobs):
        mode = "100755" if os.stat(f).st_mode & 0o100 else "100644"
        got = committed.pop(rel, None)
        if got != (mode, blob):
            why = "is not in it" if got is None else ("differs in mode" if got[1] == blob else "has other bytes")
            raise PublishError(f"the commit to publish would not be the validated dataset: {rel} {why} "
                               f"(git ignore or attribute rules, e.g. a .gitignore or .gitattributes in the task); "
                               "nothing published")
    if committed:
        raise PublishError(f"the commit to publish holds {sorted(committed)[0]}, which the dataset does not; "
                           "nothing published")


def _check_registry(path: Path, name: str, version: str, n_tasks: int) -> None:
    """Read the file back with Harbor's own registry client, as `harbor run --registry-path` will."""
    import asyncio

    from video_arena.harbor_api.registry import JsonRegistryClient

    meta = asyncio.run(JsonRegistryClient(path=path).get_dataset_metadata(f"{name}@{version}"))
    if len(meta.task_ids) != n_tasks:
        raise PublishError(f"Harbor reads {len(meta.task_ids)} tasks for {name}@{version} from {path}, not {n_tasks}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="video-arena publish", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", type=Path, help="a copy-mode dataset written by make-harbor --media copy")
    ap.add_argument("--version", required=True, help="the dataset version, e.g. 1.0.0 (never replaced once published)")
    ap.add_argument("--out", required=True, type=Path, help="the git repository to write (created when missing)")
    ap.add_argument("--git-url", default=None,
                    help="the URL the repository will be cloned from (default: its local file:// URL); push it there")
    ap.add_argument("--name", default=None, help="the registry name (default video-arena-a / video-arena-b)")
    ap.add_argument("--allow-unpinned", action="store_true",
                    help="publish a dataset whose base image is a tag (only for hosts where the tag is that image)")
    ap.add_argument("--jobs", nargs="+", type=Path, default=[], metavar="JOB",
                    help="Harbor job folders of this dataset: fill the adapter files' counts and parity")
    ap.add_argument("--tasks-root", type=Path, default=None, help="the tasks tree the dataset was generated from")
    ap.add_argument("--no-validate", action="store_true", help="skip the offline validator (not recommended)")
    ap.add_argument("--no-progress", action="store_true")
    a = ap.parse_args(argv)
    try:
        r = publish(a.dataset, a.version, a.out, git_url=a.git_url, name=a.name, allow_unpinned=a.allow_unpinned,
                    jobs=a.jobs, tasks_root=a.tasks_root, validate=not a.no_validate, progress=not a.no_progress)
    except PublishError as exc:
        print(f"publish: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"publish: error: {exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}", file=sys.stderr)
        return 2
    print(f"published {r.name}@{r.version}: {len(r.tasks)} Protocol {r.protocol} tasks, {r.bytes_total} bytes "
          f"({r.bytes_media} of video) at commit {r.commit[:12]} in {r.repo} ({r.seconds:.1f} s)")
    for run in r.runs:
        print(f"  recorded {run['job']}: {run['agent']} {run['n_trials']} trials, Harbor mean "
              f"{run['harbor_mean_reward']}, native mean {run['native_mean_reward']}, "
              f"{run['n_reward_mismatches']} disagreements")
    print(f"next: harbor run -d {r.name}@{r.version} --registry-path {r.repo / REGISTRY_FILE} -a oracle"
          + ("" if r.git_url.startswith("file://") else f"  (after pushing {r.repo} to {r.git_url})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
