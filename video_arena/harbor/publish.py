"""`video-arena publish`: a copy-mode dataset as a git repository plus a Harbor registry entry.

    video-arena make-harbor --out harbor/va-b --media copy --base-image REGISTRY/video-arena/base@sha256:<64 hex>
    video-arena publish harbor/va-b --version 1.0.0 --out ../va-harbor/      # file:// registry row
    harbor run -d video-arena-b@1.0.0 --registry-path ../va-harbor/registry.json -a oracle

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

What it writes and reads (docs/SECURITY.md, "Published datasets"): only a repository it created
(built beside --out and renamed into place) or one carrying its marker at the top; never a folder
inside another repository (every git command names the repository's own .git, so git never looks
further up). --out is resolved first and may not lie inside the dataset or the tasks tree. It copies
the task folders only, each a real directory holding only folders and regular files; any other entry at
the top of the dataset is refused, and so is a symbolic link on any path it writes in an existing
repository. JSON inputs are read with a bound (no FIFO, no device, no file over the cap). On a failure or
an interrupt it restores exactly what it changed: its own commits, the files it wrote; it never cleans
the work tree. The repository is readable by others (a clone source), as the umask allows.

`--jobs JOB ...` names Harbor job folders of this dataset (oracle, nop, or a model); the README and
adapter_metadata.json count their trials, and each is re-judged natively (a trial whose reward.json
disagrees with the judge is counted).  `--parity NATIVE ...` names native results folders (run-a or
run-b) of the same agents, paired in order with the first --jobs: parity_experiment.json then holds,
per pair, the native and the Harbor reward side by side per task and per game, with the mean difference
and its 95 % interval (video_arena/harbor/parity.py); only agents measured both ways are named in
adapter_metadata.json's parity lists.  Without --parity the parity file is Harbor's template with no
experiment (an empty list), never a number.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from video_arena import paths
from video_arena.core import results as R
from video_arena.core.tasks import TasksTree
from video_arena.digests import sha256_hasher
from video_arena.harbor import spec as S
from video_arena.harbor_api.version import installed_version

REGISTRY_FILE = "registry.json"
#: The marker that says a repository was written by this command (so it may add versions to it).
REPO_MARKER = ".video-arena-publish.json"
REPO_FORMAT = "video-arena-publish/1"
ATTRIBUTES_FILE = ".gitattributes"
NAME_RE = re.compile(r"\A[a-z0-9][a-z0-9._-]{0,99}\Z")
VERSION_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._+-]{0,63}\Z")
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "video-arena publish", "GIT_AUTHOR_EMAIL": "video-arena@localhost",
                "GIT_COMMITTER_NAME": "video-arena publish", "GIT_COMMITTER_EMAIL": "video-arena@localhost"}
#: The largest file of a task publish copies: the video (a long match at the render size is a few
#: hundred MB) and everything else far below it; a larger one (a sparse file, a runaway log) is refused.
MAX_TASK_FILE_BYTES = 4 << 30
VIDEO_REL = "environment/match.mp4"


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
    parity: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


# --------------------------------------------------------------------------------------------------
# reading what publish is given: bounded, never through a link, never blocking
# --------------------------------------------------------------------------------------------------
def _json_object(path: Path) -> dict[str, Any]:
    """A JSON object read with the results contract's bound (no link, no FIFO, no device)."""
    doc, err = R.read_json_object(path)
    if doc is None:
        raise PublishError(f"{path} is {err}")
    return doc


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _no_link_below(base: Path, path: Path) -> None:
    """Every component of `path` below `base` is a real folder or file (no symbolic link)."""
    cur = base
    for part in path.relative_to(base).parts:
        cur = cur / part
        st = _lstat(cur)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise PublishError(f"{cur} is a symbolic link (to {os.readlink(cur)!r}); publish writes and reads "
                               "only real folders and files")


def task_files(task: Path) -> list[tuple[str, int, int]]:
    """(relative path, size, mode) of every regular file of a task folder; raises PublishError for a
    symbolic link, a FIFO, a device or a socket anywhere in it, or a file over the size cap."""
    st = _lstat(task)
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise PublishError(f"{task} is {'a symbolic link' if st is not None and stat.S_ISLNK(st.st_mode) else 'not a folder'}; "
                           "a published task is a real folder")
    out = []
    for top, dirs, files in os.walk(task, followlinks=False):
        for name in sorted(dirs + files):
            p = Path(top) / name
            st = os.lstat(p)
            rel = p.relative_to(task).as_posix()
            if stat.S_ISLNK(st.st_mode):
                raise PublishError(f"{p} is a symbolic link; a published task holds only folders and regular files")
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                raise PublishError(f"{p} is not a regular file (a FIFO, a device or a socket); a published task "
                                   "holds only folders and regular files")
            if st.st_size > MAX_TASK_FILE_BYTES:
                raise PublishError(f"{p} is {st.st_size} bytes, more than the {MAX_TASK_FILE_BYTES} a task file "
                                   "may have")
            out.append((rel, st.st_size, st.st_mode))
    return out


def _copy_file(src: Path, dst: Path) -> str:
    """Copy one regular file (opened without following a link or blocking; checked again after opening)
    to a new file; returns the SHA-256 of the bytes copied."""
    h = sha256_hasher()
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_TASK_FILE_BYTES:
            raise PublishError(f"{src} changed while it was copied (no longer a regular file under the cap)")
        mode = 0o755 if st.st_mode & 0o100 else 0o644
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        try:
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                h.update(b)
                os.write(out, b)
            os.fchmod(out, mode)
        finally:
            os.close(out)
    finally:
        os.close(fd)
    return h.hexdigest()


def copy_task(src: Path, dst: Path) -> None:
    """A byte copy of a task folder: its folders and regular files, nothing else (task_files' rules)."""
    files = task_files(src)
    dst.mkdir(mode=0o755)
    for rel, _size, _mode in files:
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        _copy_file(src / rel, target)


# --------------------------------------------------------------------------------------------------
# the dataset
# --------------------------------------------------------------------------------------------------
def read_marker(dataset: Path) -> dict[str, Any]:
    marker = dataset / S.DATASET_MARKER
    if not dataset.is_dir():
        raise PublishError(f"{dataset} is not a folder")
    if _lstat(marker) is None:
        raise PublishError(f"{dataset} is not a dataset written by make-harbor (no {S.DATASET_MARKER})")
    doc, err = R.read_json_object(marker)
    if doc is None:
        raise PublishError(f"{marker} is {err}")
    if doc.get("format") != S.DATASET_FORMAT:
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
        if not isinstance(task, str) or not task.startswith(S.TASK_ORG + "/") \
                or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", task.split("/", 1)[1]):
            raise PublishError(f"{dataset}: the marker lists a task {task!r} that is not {S.TASK_ORG}/<game>-<case>")
        names.append(task.split("/", 1)[1])
    if not names:
        raise PublishError(f"{dataset} holds no tasks")
    # Only the listed task folders and the marker: anything else at the top (an .env, notes, a stray
    # big file, a link) is refused rather than silently left out or carried along.
    others = sorted(p.name for p in dataset.iterdir() if p.name not in set(names) | {S.DATASET_MARKER})
    if others:
        raise PublishError(f"{dataset} holds {others[0]!r}{f' and {len(others) - 1} more' if len(others) > 1 else ''}"
                           f", which is neither a task folder its marker lists nor the marker; publish copies "
                           "task folders only: move it out of the dataset")
    lost = sorted(n for n in names if _lstat(dataset / n) is None)
    if lost:
        raise PublishError(f"{dataset}: the task folders differ from the marker's list; missing: {', '.join(lost[:3])}")
    for name in names:
        files = {rel: size for rel, size, _ in task_files(dataset / name)}
        case = dataset / name / "tests" / "case.json"
        doc = _json_object(case)
        if VIDEO_REL not in files:
            raise PublishError(f"{dataset / name / VIDEO_REL} is missing (a copy-mode task carries its video)")
        if _sha256_regular(dataset / name / VIDEO_REL) != doc.get("media_sha256"):
            raise PublishError(f"{dataset / name / VIDEO_REL} differs from the SHA-256 make-harbor recorded in "
                               f"{case}; regenerate the dataset")
    return names


def _sha256_regular(path: Path) -> str:
    h = sha256_hasher()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PublishError(f"{path} is not a regular file")
        while b := os.read(fd, 1 << 20):
            h.update(b)
    finally:
        os.close(fd)
    return h.hexdigest()


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
def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(float(v)) else None


def summarise_job(job: Path, task_names: set[str], tasks_root: Path | None) -> dict[str, Any]:
    """One Harbor job of this dataset: per agent, trials, Harbor's mean reward, the natively re-judged
    mean and the disagreements (the scorer re-judges every collected answer with judge/judge.py)."""
    from video_arena.scoring.harbor_jobs import score_job
    from video_arena.scoring.cells import ScoringInputError

    if _lstat(job / "config.json") is None:
        raise PublishError(f"{job} is not a Harbor job folder (no config.json)")
    cfg = _json_object(job / "config.json")
    agents = [str(a.get("name") or a.get("import_path") or "?") for a in cfg.get("agents") or []
              if isinstance(a, dict)] if isinstance(cfg.get("agents") or [], list) else []
    trials = []
    for tdir in sorted(p for p in job.iterdir() if p.is_dir() and not p.is_symlink()):
        rfile = tdir / "result.json"
        if _lstat(rfile) is None:
            continue
        res, err = R.read_json_object(rfile)
        if res is None:  # skipping it would understate n_trials in the adapter files
            raise PublishError(f"{rfile} is unreadable ({err}); a job still running, or a damaged trial: "
                               f"publish only finished jobs")
        vr = res.get("verifier_result") or {}
        if not isinstance(vr, dict) or not isinstance(vr.get("rewards") or {}, dict):
            raise PublishError(f"{rfile} is not a Harbor trial result (a JSON object, its verifier_result and "
                               f"rewards objects)")
        tname = str(res.get("task_name") or "")
        if tname.split("/", 1)[-1] not in task_names:
            raise PublishError(f"{job}: trial {tdir.name} ran {tname!r}, not a task of this dataset")
        trials.append(res)
    ran = sorted({str(t.get("task_name") or "").split("/", 1)[-1] for t in trials})
    if not trials:
        raise PublishError(f"{job} holds no finished trial")
    try:
        system = score_job(job, tasks_root, n_boot=0, progress=False)
    except ScoringInputError as exc:
        raise PublishError(f"cannot score {job}: {exc}") from None
    harbor_rewards = []
    for t in trials:
        rewards = (t.get("verifier_result") or {}).get("rewards")
        if rewards:
            v = _finite(rewards.get("reward"))
            if v is None:
                raise PublishError(f"{job}: trial of {t.get('task_name')!r} records reward "
                                   f"{rewards.get('reward')!r}, not a finite number")
            harbor_rewards.append(v)
    scored = [c for c in system.cells() if getattr(c, "trial", None) and c.status == "scored"]
    native = [float(c.record["reward"]) for c in scored if c.record]
    facts = system.harbor or {}
    models = sorted({str(a.get("model_name")) for a in cfg.get("agents") or [] if isinstance(a, dict)
                     and a.get("model_name")}) if isinstance(cfg.get("agents") or [], list) else []
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


def game_provenance(games: list[str], tasks_root: Path | None) -> dict[str, dict[str, Any]]:
    """Per game, its manifest's `provenance` as recorded (source, licence, engines, ...), and the case
    licences when the cases name their own (imported cases do)."""
    tree = TasksTree(paths.tasks_root(tasks_root))
    out: dict[str, dict[str, Any]] = {}
    for g in games:
        path = tree.manifest_path(g)
        doc, err = R.read_json_object(path) if _lstat(path) is not None else (None, "absent")
        if doc is None:
            out[g] = {"licence": f"not recorded (tasks tree {g}/manifest.json {err})"}
            continue
        prov = doc.get("provenance")
        entry = dict(prov) if isinstance(prov, dict) else {}
        if "licence" not in entry:
            entry["licence"] = "not recorded in the manifest's provenance"
        cases = doc.get("cases") if isinstance(doc.get("cases"), list) else []
        case_licences = sorted({str(c["licence"]) for c in cases if isinstance(c, dict) and c.get("licence")})
        if case_licences and case_licences != [str(entry["licence"])]:
            entry["case_licences"] = case_licences
        out[g] = entry
    return out


def _agent_label(agent: str, model: str | None) -> str:
    """Harbor's `agent@version+model` naming, as far as the job records it."""
    return agent + (f"+{model}" if model else "")


def parity_entries(name: str, tasks: list[str], pairs: list[tuple[dict[str, Any], Any]]) -> list[dict[str, Any]]:
    """parity_experiment.json: Harbor's template, one entry per agent measured both ways."""
    from video_arena.harbor.parity import sem_str

    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    out = []
    for run, par in pairs:
        out.append({
            "adapter_name": name, "agent": run["agent"], "model": run["model"], "date": today,
            "adapted_benchmark_size": len(tasks), "parity_benchmark_size": par.n_paired,
            "number_of_runs": 1,
            "notes": (f"original = the project's own harness ({par.native}: {par.native_agent}), harbor = Harbor "
                      f"job {par.job} ({par.harbor_agent}); per task and per game below; mean difference "
                      f"Harbor - native {par.mean_difference:+.4f}, 95 % CI {par.difference_ci95} over "
                      f"{par.n_paired} paired tasks: {'matching' if par.matching else 'NOT matching'}"
                      + (f"; {par.n_native_only} task(s) scored only natively, {par.n_harbor_only} only on "
                         "Harbor (not compared)" if par.n_native_only or par.n_harbor_only else "")),
            "original_parity_repo": None, "adapter_pr": [], "dataset_pr": [], "parity_pr": [],
            "metrics": [{
                "benchmark_name": "Video-Arena", "metric": "reward",
                "original": sem_str([par.mean_native]), "harbor": sem_str([par.mean_harbor]),
                "original_runs": [par.mean_native], "harbor_runs": [par.mean_harbor],
            }],
            "video_arena_parity": par.to_doc(),
        })
    return out


def adapter_files(name: str, version: str, marker: dict[str, Any], tasks: list[str], sizes: dict[str, int],
                  runs: list[dict[str, Any]], git_url: str, provenance: dict[str, dict[str, Any]],
                  pairs: list[tuple[dict[str, Any], Any]] | None = None) -> dict[str, str]:
    pairs = pairs or []
    protocol = marker.get("protocol")
    games = sorted({t.rsplit("-", 1)[0] for t in tasks})
    counts: dict[str, int] = {}
    for r in runs:
        counts[r["agent"]] = counts.get(r["agent"], 0) + r["n_trials"]
    mismatches = sum(r["n_reward_mismatches"] for r in runs)
    checked = sum(r["n_reward_checked"] for r in runs)
    matching = sorted(_agent_label(r["agent"], r["model"]) for r, p in pairs if p.matching)
    unmatching = sorted(_agent_label(r["agent"], r["model"]) for r, p in pairs if not p.matching)
    parity = parity_entries(name, tasks, pairs)
    parity_note = (f"{len(pairs)} agent(s) measured both ways (native harness and Harbor): "
                   + "; ".join(f"{_agent_label(r['agent'], r['model'])} {'matching' if p.matching else 'NOT matching'}"
                               for r, p in pairs)
                   if pairs else "no parity experiment recorded (publish --parity NATIVE_RESULTS --jobs JOB)")
    check_note = (f"{checked} Harbor trials re-judged natively, {mismatches} disagree with Harbor's reward"
                  if runs else "no Harbor job recorded (publish --jobs JOB ...)")
    metadata = [{
        "adapter_name": name,
        "adapter_builders": [],
        "original_benchmark": [{
            "split": "test", "size": len(tasks), "harness": "agent" if protocol == "B" else "llm",
            "supported_agents": None, "adaptable": True,
            "notes": f"Protocol {protocol}; native runners run-a / run-b; games: {', '.join(games)}",
        }],
        "harbor_adapter": [{
            "split": "test",
            "adapted_benchmark_size": len(tasks),
            "parity_benchmark_size": max((p.n_paired for _, p in pairs), default=None),
            "parity_sampling_rate": (round(max(p.n_paired for _, p in pairs) / len(tasks), 4) if pairs else None),
            "registry_benchmark_size": len(tasks),
            "added_agents": ["protocol_a_agent:ProtocolA"] if protocol == "A" else [],
            "parity_matching_agents": matching,
            "parity_unmatching_agents": unmatching or None,
            "parity_costs": None,
            "notes": (f"{name}@{version}: {len(tasks)} copy-mode tasks, {sizes['total']} bytes "
                      f"({sizes['media']} of video); base image {marker.get('base_image')}"
                      f"{'' if marker.get('base_image_pinned') else ' (a tag, not pinned)'}; --net {marker.get('net')}; "
                      f"trials: {', '.join(f'{a} {n}' for a, n in sorted(counts.items())) or 'none recorded'}; "
                      f"{check_note}; parity: {parity_note}; licences and provenance per game: `provenance`"),
        }],
        "provenance": provenance,
    }]
    readme = _readme(name, version, marker, tasks, games, sizes, runs, git_url, provenance, parity, parity_note,
                     check_note)
    return {"README.md": readme,
            "adapter_metadata.json": json.dumps(metadata, indent=2) + "\n",
            "parity_experiment.json": json.dumps(parity, indent=2) + "\n"}


def _provenance_lines(provenance: dict[str, dict[str, Any]], games: list[str]) -> str:
    out = []
    for g in games:
        entry = provenance.get(g) or {}
        out.append(f"### {g}\n")
        out.append(f"- **licence**: {entry.get('licence')}")
        for k, v in entry.items():
            if k == "licence":
                continue
            text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
            out.append(f"- {k}: {text}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _readme(name, version, marker, tasks, games, sizes, runs, git_url, provenance, parity, parity_note,
            check_note) -> str:
    protocol = marker.get("protocol")
    agent_hint = ("-a protocol_a_agent:ProtocolA -m openai/<model>" if protocol == "A"
                  else "-a terminus-2 -m <provider/model> --ak max_turns=200")
    rows = "\n".join(f"| {r['job']} | {r['agent']} | {r['n_trials']} | {r['harbor_mean_reward']} | "
                     f"{r['native_mean_reward']} | {r['n_reward_mismatches']} |" for r in runs) \
        or "| (none recorded) | | | | | |"
    prow, grow = [], []
    for e in parity:
        p, m = e["video_arena_parity"], e["metrics"][0]
        ci = p["difference_ci95"]
        prow.append(f"| {e['agent']} | {e['model'] or '-'} | reward | {e['number_of_runs']} | "
                    f"{e['parity_benchmark_size']} tasks ({100 * e['parity_benchmark_size'] / len(tasks):.0f}% of "
                    f"the full set) | {m['original']} | {m['harbor']} | {p['mean_difference_harbor_minus_native']:+.4f} "
                    f"{ci} | {'yes' if p['matching'] else 'no'} |")
        for g, x in p["per_game"].items():
            grow.append(f"| {e['agent']} | {g} | {x['n_tasks']} | {x['native']:.4f} | {x['harbor']:.4f} | "
                        f"{x['mean_difference']:+.4f} | {x['difference_ci95']} |")
    parity_table = ("| Agent | Model | Metric | Number of Runs | Dataset Size | Original Benchmark Performance "
                    "| Harbor Adapter Performance | Harbor - original (95 % CI) | matching |\n"
                    "|---|---|---|---|---|---|---|---|---|\n" + ("\n".join(prow) or "| (none measured) | | | | | | | | |"))
    if grow:
        parity_table += ("\n\nPer game (tasks scored both ways):\n\n| Agent | game | tasks | original | Harbor "
                         "| Harbor - original | 95 % CI |\n|---|---|---|---|---|---|---|\n" + "\n".join(grow))
    lic = _provenance_lines(provenance, games)
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

"Original" is the same agent run through the project's own harness (`video-arena run-a` / `run-b`,
scored by `video-arena score`); "Harbor" is its Harbor job's reward (the verifier's `reward.json`).
Per task the two rewards are paired; the difference is Harbor - original with a 95 % bootstrap
interval over the paired tasks, and an agent is matching when that interval holds 0
(`parity_experiment.json` has every task). {parity_note}.

{parity_table}

Harbor jobs recorded, each trial's answer re-judged with the project's judge ({check_note}):

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

Every game's licence and provenance as its `manifest.json` records them (also in
`adapter_metadata.json`, key `provenance`):

{lic}"""



# --------------------------------------------------------------------------------------------------
# git: always the repository's own .git (never one found further up), no hooks
# --------------------------------------------------------------------------------------------------
def _git_env() -> dict[str, str]:
    """The environment of every git command: no GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE or the like from
    the caller (they would point git at another repository); the user's global config stays."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in ("GIT_CONFIG_GLOBAL",
                                                                                     "GIT_CONFIG_NOSYSTEM")}
    for k, v in GIT_IDENTITY.items():
        env.setdefault(k, os.environ.get(k, v))
    return env


def _run_git(cmd: list[str], where: Path, what: str, input: str | None = None) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, env=_git_env(), input=input,
                       stdin=None if input else subprocess.DEVNULL)
    if p.returncode != 0:
        last = ((p.stderr or p.stdout).strip().splitlines() or ["no output"])[-1]
        raise PublishError(f"git {what} failed in {where}: {last}")
    return p.stdout.strip()


def _git(repo: Path, *args: str, input: str | None = None) -> str:
    return _run_git(["git", f"--git-dir={repo / '.git'}", f"--work-tree={repo}", "-c", f"core.hooksPath={os.devnull}",
                     "-C", str(repo), *args], repo, " ".join(args[:2]), input)


def _load_registry(repo: Path) -> list[dict[str, Any]]:
    path = repo / REGISTRY_FILE
    if _lstat(path) is None:
        return []
    try:
        data, size = R.read_bounded(path, R.MAX_RECORD_BYTES)
    except OSError as exc:
        raise PublishError(f"{path} is unreadable ({exc.strerror or exc})") from None
    if size > R.MAX_RECORD_BYTES:
        raise PublishError(f"{path} is larger than {R.MAX_RECORD_BYTES} bytes")
    try:
        rows = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise PublishError(f"{path} is not JSON ({str(exc)[:80]})") from None
    if not isinstance(rows, list):
        raise PublishError(f"{path} is not a Harbor registry (a JSON list of datasets)")
    from pydantic import ValidationError

    from video_arena.harbor_api.registry import DatasetSpec

    for i, row in enumerate(rows):
        try:
            DatasetSpec.model_validate(row)
        except ValidationError as exc:
            first = exc.errors()[0] if exc.errors() else {}
            where = ".".join(str(x) for x in first.get("loc", ())) or "row"
            raise PublishError(f"{path}: row {i} is not a Harbor registry dataset ({where}: "
                               f"{first.get('msg', 'invalid')}); fix the registry before adding a version") from None
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


def resolve_out(out: Path, dataset: Path, tasks_root: Path | None) -> Path:
    """--out with every symbolic link resolved; refused inside (or around) the dataset or the tasks tree."""
    out = Path(os.path.realpath(out.expanduser()))
    if out == dataset or dataset in out.parents or out in dataset.parents:
        raise PublishError(f"--out {out} overlaps the dataset {dataset}")
    trees = {paths.default_tasks_root().resolve()}
    try:
        root = paths.tasks_root(tasks_root)
        trees |= {root, paths.media_root(root).resolve()}
    except FileNotFoundError:
        pass
    for t in sorted(trees):
        if out == t or t in out.parents or out in t.parents:
            raise PublishError(f"--out {out} overlaps the tasks tree {t}: publish into a folder of its own")
    return out


def _enclosing_repository(path: Path) -> Path | None:
    """The work tree of a git repository that holds `path` (an ancestor with a .git), if any."""
    for d in [path, *path.parents]:
        if os.path.lexists(d / ".git"):
            return d
    return None


def own_repository(out: Path) -> bool:
    """True for an existing repository publish may add a version to, False for a place to create one;
    raises PublishError for anything else."""
    st = _lstat(out)
    if st is None:
        holder = _enclosing_repository(out.parent)
        if holder is not None:
            raise PublishError(f"--out {out} is inside the git repository {holder}: publish creates its own "
                               "repository, never a folder of another one; choose a folder outside it")
        return False
    if not stat.S_ISDIR(st.st_mode):
        raise PublishError(f"--out {out} exists and is not a folder")
    entries = list(out.iterdir())
    holder = _enclosing_repository(out)
    if not entries:
        if holder is not None:
            raise PublishError(f"--out {out} is inside the git repository {holder}: publish creates its own "
                               "repository, never a folder of another one; choose a folder outside it")
        return False
    marker = out / REPO_MARKER
    mst = _lstat(marker)
    if mst is None or not stat.S_ISREG(mst.st_mode):
        raise PublishError(f"--out {out} exists and was not written by video-arena publish (no {REPO_MARKER}); "
                           "choose a new folder")
    gst = _lstat(out / ".git")
    if gst is None or not stat.S_ISDIR(gst.st_mode):
        raise PublishError(f"--out {out} holds {REPO_MARKER} but no .git folder of its own: not a repository "
                           "publish wrote")
    doc, err = R.read_json_object(marker)
    if doc is None or doc.get("format") != REPO_FORMAT:
        raise PublishError(f"{marker} is {err or f'not a {REPO_FORMAT} marker'}")
    return True


def _check_write_paths(repo: Path, rel_base: Path) -> None:
    """No symbolic link on any path publish writes in an existing repository (a committed
    `datasets -> /elsewhere` would put the tasks, ground truth included, outside it)."""
    for rel in (REGISTRY_FILE, REPO_MARKER, ATTRIBUTES_FILE, rel_base.as_posix()):
        _no_link_below(repo, repo / rel)
    for rel in (REGISTRY_FILE,):
        st = _lstat(repo / rel)
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise PublishError(f"{repo / rel} is not a regular file")


class _Changes:
    """What publish changed in an existing repository, so that a failure restores exactly that: the
    branch's commit (its own commits are dropped), the folders and files it created, registry.json's
    bytes.  Nothing else is touched (never a clean of the work tree)."""

    def __init__(self, repo: Path, rel_base: Path):
        self.repo = repo
        self.head = _git(repo, "rev-parse", "HEAD")
        reg = repo / REGISTRY_FILE
        self.registry = R.read_bounded(reg, R.MAX_RECORD_BYTES)[0] if _lstat(reg) is not None else None
        self.created: list[Path] = []
        d = repo
        for part in rel_base.parts:
            d = d / part
            if _lstat(d) is None:
                self.created.append(d)

    def restore(self) -> None:
        try:  # the branch and the index back to the commit publish found; the work tree is not touched
            _git(self.repo, "reset", "-q", "--mixed", self.head)
        except PublishError:
            pass
        if self.created:
            shutil.rmtree(self.created[0], ignore_errors=True)
        reg = self.repo / REGISTRY_FILE
        if self.registry is None:
            if _lstat(reg) is not None and not (reg.is_symlink() or reg.is_dir()):
                reg.unlink()
        else:
            R.write_bytes_atomic(reg, self.registry)


def _readable_mode() -> int:
    """0777 less the umask for folders (a clone source others can read), never 0700 by accident."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o777 & ~umask


def publish(dataset: Path, version: str, out: Path, git_url: str | None = None, name: str | None = None,
            allow_unpinned: bool = False, jobs: list[Path] | None = None, tasks_root: Path | None = None,
            validate: bool = True, progress: bool = True, parity: list[Path] | None = None) -> Published:
    t0 = time.monotonic()
    if shutil.which("git") is None:
        raise PublishError("git is not installed (apt-get install git)")
    dataset = Path(os.path.realpath(dataset.expanduser()))
    marker = read_marker(dataset)
    protocol = str(marker.get("protocol"))
    name = name or f"video-arena-{protocol.lower()}"
    if not NAME_RE.fullmatch(name):
        raise PublishError(f"--name {name!r}: Harbor's registry names are bare (lowercase letters, digits, . _ -; "
                           "no '/', which Harbor reads as a package)")
    if not VERSION_RE.fullmatch(version or ""):
        raise PublishError(f"--version {version!r}: use letters, digits and . _ + - (e.g. 1.0.0)")
    jobs, parity = list(jobs or []), list(parity or [])
    if len(parity) > len(jobs):
        raise PublishError(f"--parity names {len(parity)} native run(s) but --jobs only {len(jobs)}: each native "
                           "run is paired, in order, with a Harbor job of the same agent")
    tasks = check_publishable(dataset, marker, allow_unpinned)
    out = resolve_out(out, dataset, tasks_root)
    existing = own_repository(out)
    rel_base = Path("datasets") / name / version
    if existing:
        _check_write_paths(out, rel_base)
        if _git(out, "status", "--porcelain", "--untracked-files=all"):
            raise PublishError(f"{out} has uncommitted changes; commit or discard them first")
    rows = _load_registry(out) if existing else []
    if any(r.get("name") == name and r.get("version") == version for r in rows if isinstance(r, dict)):
        raise PublishError(f"{name}@{version} is already published in {out}; a published version is never "
                           "replaced: choose a new --version")
    if existing and _lstat(out / rel_base) is not None:
        raise PublishError(f"{out / rel_base} already exists in {out}")
    if validate:
        validate_dataset(dataset, tasks_root, progress)
    runs = [summarise_job(Path(os.path.realpath(Path(j).expanduser())), set(tasks), tasks_root) for j in jobs]
    pairs = []
    if parity:
        from video_arena.harbor.parity import ParityError, compare_runs

        for native, job, run in zip(parity, jobs, runs):
            try:
                pairs.append((run, compare_runs(Path(native).expanduser(), Path(job).expanduser(), tasks_root)))
            except ParityError as exc:
                raise PublishError(f"--parity {native} with {job}: {exc}") from None
            bad = {r["task"] for r in pairs[-1][1].per_task} - set(tasks)
            if bad:
                raise PublishError(f"--parity {native}: {sorted(bad)[0]} is not a task of this dataset")
    git_url = git_url or out.as_uri()

    if not existing:  # a new repository is built beside --out and renamed into place when complete
        out.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
        changes = None
    else:
        work = out
        changes = _Changes(out, rel_base)
    target = work / rel_base
    try:
        if not existing:
            os.chmod(work, _readable_mode())
            _run_git(["git", "init", "-q", str(work)], work, "init")
            _git(work, "config", "uploadpack.allowFilter", "true")
            (work / REPO_MARKER).write_text(json.dumps({"format": REPO_FORMAT}) + "\n")
            (work / ATTRIBUTES_FILE).write_text("*.mp4 binary\n")
        target.mkdir(parents=True, mode=0o755)
        for d in [target, *target.parents]:
            if d == work:
                break
            os.chmod(d, 0o755)
        for t in tasks:
            copy_task(dataset / t, target / t)
        total, media = _tree_bytes(target)
        sizes = {"total": total, "media": media}
        provenance = game_provenance(sorted({t.rsplit("-", 1)[0] for t in tasks}), tasks_root)
        for fname, text in adapter_files(name, version, marker, tasks, sizes, runs, git_url, provenance,
                                         pairs).items():
            (target / fname).write_text(text, encoding="utf-8")
        # only what publish wrote, whatever ignore rules say (a .gitignore inside a task, the user's global
        # excludes file), with the executable bits and the bytes as they are
        own = [rel_base.as_posix()] + ([] if existing else [REPO_MARKER, ATTRIBUTES_FILE])
        _git(work, "-c", "core.fileMode=true", "-c", "core.autocrlf=false", "add", "--force", "--", *own)
        _git(work, "commit", "-q", "--no-verify", "-m", f"publish {name}@{version}: {len(tasks)} Protocol {protocol} tasks")
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
        R.write_bytes_atomic(work / REGISTRY_FILE, (json.dumps(rows, indent=1) + "\n").encode("utf-8"))
        os.chmod(work / REGISTRY_FILE, 0o644)
        _check_registry(work / REGISTRY_FILE, name, version, len(tasks))
        _git(work, "add", "--force", "--", REGISTRY_FILE)
        _git(work, "commit", "-q", "--no-verify", "-m", f"registry: {name}@{version} at {commit[:12]}")
        registry_commit = _git(work, "rev-parse", "HEAD")
        if not existing:
            os.rename(work, out)  # onto a missing or empty folder: atomic
    except BaseException:
        if changes is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            changes.restore()
        raise
    return Published(repo=out, name=name, version=version, git_url=git_url, commit=commit,
                     registry_commit=registry_commit, tasks=tasks, bytes_total=total, bytes_media=media,
                     protocol=protocol, runs=runs, parity=[p.to_doc() for _, p in pairs],
                     seconds=time.monotonic() - t0)


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
    blobs = _git(repo, "hash-object", "--no-filters", "--stdin-paths",
                 input="".join(f"{f}\n" for f in files)).split()
    if len(blobs) != len(files):
        raise PublishError(f"git hash-object failed in {repo}: {len(blobs)} digests for {len(files)} files")
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
    ap.add_argument("--out", required=True, type=Path,
                    help="the git repository to write (created when missing; an existing one only if publish wrote it)")
    ap.add_argument("--git-url", default=None,
                    help="the URL the repository will be cloned from (default: its local file:// URL); push it there")
    ap.add_argument("--name", default=None, help="the registry name (default video-arena-a / video-arena-b)")
    ap.add_argument("--allow-unpinned", action="store_true",
                    help="publish a dataset whose base image is a tag (only for hosts where the tag is that image)")
    ap.add_argument("--jobs", nargs="+", type=Path, default=[], metavar="JOB",
                    help="Harbor job folders of this dataset: their trials are counted and re-judged")
    ap.add_argument("--parity", nargs="+", type=Path, default=[], metavar="NATIVE_RESULTS",
                    help="native results folders (run-a / run-b) of the agents of the first --jobs, in order: "
                         "the parity experiment (per task and per game, native beside Harbor)")
    ap.add_argument("--tasks-root", type=Path, default=None, help="the tasks tree the dataset was generated from")
    ap.add_argument("--no-validate", action="store_true", help="skip the offline validator (not recommended)")
    ap.add_argument("--no-progress", action="store_true")
    a = ap.parse_args(argv)
    try:
        r = publish(a.dataset, a.version, a.out, git_url=a.git_url, name=a.name, allow_unpinned=a.allow_unpinned,
                    jobs=a.jobs, tasks_root=a.tasks_root, validate=not a.no_validate, progress=not a.no_progress,
                    parity=a.parity)
    except KeyboardInterrupt:
        print("publish: interrupted; nothing published (what it had written is undone)", file=sys.stderr)
        return 130
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
    for p in r.parity:
        print(f"  parity {p['native']} vs {p['job']}: {p['n_paired_tasks']} tasks, native {p['mean_native']:.4f}, "
              f"Harbor {p['mean_harbor']:.4f}, difference {p['mean_difference_harbor_minus_native']:+.4f} "
              f"{p['difference_ci95']}: {'matching' if p['matching'] else 'NOT matching'}")
    print(f"next: harbor run -d {r.name}@{r.version} --registry-path {r.repo / REGISTRY_FILE} -a oracle"
          + ("" if r.git_url.startswith("file://") else f"  (after pushing {r.repo} to {r.git_url})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
