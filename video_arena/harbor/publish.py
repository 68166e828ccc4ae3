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
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from video_arena import safe_io
from video_arena.harbor import spec as S
from video_arena.harbor.publish_adapter import adapter_files, game_provenance, parity_entries, summarise_job
from video_arena.harbor.publish_dataset import (MAX_TASK_FILE_BYTES, VIDEO_REL, PublishError, check_publishable,
                                                copy_task, lstat_or_none, read_marker, task_files, tree_bytes,
                                                validate_dataset)
from video_arena.harbor.publish_repository import (ATTRIBUTES_FILE, REGISTRY_FILE, REPO_FORMAT, REPO_MARKER,
                                                   RepositoryChanges, check_commit, check_registry,
                                                   check_write_paths, git, load_registry, own_repository,
                                                   readable_mode, resolve_out, run_git)

#: This module is the command: the order of its steps.  The steps live in publish_dataset.py (what it
#: reads and copies), publish_adapter.py (the adapter files) and publish_repository.py (the git
#: repository); their names are importable from here, and publish() calls them through this module's
#: names (a test that patches `publish.check_registry` or `publish.copy_task` patches the call).
__all__ = ["ATTRIBUTES_FILE", "MAX_TASK_FILE_BYTES", "NAME_RE", "REGISTRY_FILE", "REPO_FORMAT", "REPO_MARKER",
           "VERSION_RE", "VIDEO_REL", "Published", "PublishError", "adapter_files", "check_publishable",
           "check_registry", "copy_task", "game_provenance", "main", "own_repository", "parity_entries",
           "publish", "read_marker", "resolve_out", "summarise_job", "task_files", "validate_dataset"]

NAME_RE = re.compile(r"\A[a-z0-9][a-z0-9._-]{0,99}\Z")
VERSION_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._+-]{0,63}\Z")


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
        check_write_paths(out, rel_base)
        if git(out, "status", "--porcelain", "--untracked-files=all"):
            raise PublishError(f"{out} has uncommitted changes; commit or discard them first")
    rows = load_registry(out) if existing else []
    if any(r.get("name") == name and r.get("version") == version for r in rows if isinstance(r, dict)):
        raise PublishError(f"{name}@{version} is already published in {out}; a published version is never "
                           "replaced: choose a new --version")
    if existing and lstat_or_none(out / rel_base) is not None:
        raise PublishError(f"{out / rel_base} already exists in {out}")
    if validate:
        validate_dataset(dataset, tasks_root, progress)
    runs = [summarise_job(Path(os.path.realpath(Path(j).expanduser())), set(tasks), tasks_root) for j in jobs]
    pairs = []
    if parity:
        # deferred: harbor/parity.py and the scoring modules (about 0.2 s of CPU); only --parity
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
        changes = RepositoryChanges(out, rel_base)
    target = work / rel_base
    try:
        if not existing:
            os.chmod(work, readable_mode())
            run_git(["git", "init", "-q", str(work)], work, "init")
            git(work, "config", "uploadpack.allowFilter", "true")
            (work / REPO_MARKER).write_text(json.dumps({"format": REPO_FORMAT}) + "\n")
            (work / ATTRIBUTES_FILE).write_text("*.mp4 binary\n")
        target.mkdir(parents=True, mode=0o755)
        for d in [target, *target.parents]:
            if d == work:
                break
            os.chmod(d, 0o755)
        for t in tasks:
            copy_task(dataset / t, target / t)
        total, media = tree_bytes(target)
        sizes = {"total": total, "media": media}
        provenance = game_provenance(sorted({t.rsplit("-", 1)[0] for t in tasks}), tasks_root)
        # the dataset metric (Harbor's `uv-script`): the benchmark's headline, the mean of per-game means
        shutil.copyfile(S.metric_script(), target / S.METRIC_FILE)
        os.chmod(target / S.METRIC_FILE, 0o644)
        for fname, text in adapter_files(name, version, marker, tasks, sizes, runs, git_url, provenance,
                                         pairs).items():
            (target / fname).write_text(text, encoding="utf-8")
        # only what publish wrote, whatever ignore rules say (a .gitignore inside a task, the user's global
        # excludes file), with the executable bits and the bytes as they are
        own = [rel_base.as_posix()] + ([] if existing else [REPO_MARKER, ATTRIBUTES_FILE])
        git(work, "-c", "core.fileMode=true", "-c", "core.autocrlf=false", "add", "--force", "--", *own)
        git(work, "commit", "-q", "--no-verify", "-m", f"publish {name}@{version}: {len(tasks)} Protocol {protocol} tasks")
        commit = git(work, "rev-parse", "HEAD")
        check_commit(work, commit, rel_base, target)
        # deferred: Harbor's registry models (about 0.2 s of CPU); a refusal or --help does not pay it
        from video_arena.harbor_api.registry import DatasetSpec

        entry = {"name": name, "version": version,
                 "description": (f"Video-Arena Protocol {protocol}: {len(tasks)} long-video game tasks "
                                 f"(copy mode, base image {marker.get('base_image')}, --net {marker.get('net')})"),
                 "tasks": [{"name": f"{S.TASK_ORG}/{t}", "git_url": git_url, "git_commit_id": commit,
                            "path": (rel_base / t).as_posix()} for t in tasks],
                 # relative to the directory harbor runs in: the repository's root (the command printed below)
                 "metrics": [{"type": "uv-script", "kwargs": {"script_path": (rel_base / S.METRIC_FILE).as_posix()}}]}
        DatasetSpec.model_validate(entry)
        rows = [r for r in rows] + [entry]
        safe_io.write_bytes_atomic(work / REGISTRY_FILE, (json.dumps(rows, indent=1) + "\n").encode("utf-8"))
        os.chmod(work / REGISTRY_FILE, 0o644)
        check_registry(work / REGISTRY_FILE, name, version, len(tasks))
        git(work, "add", "--force", "--", REGISTRY_FILE)
        git(work, "commit", "-q", "--no-verify", "-m", f"registry: {name}@{version} at {commit[:12]}")
        registry_commit = git(work, "rev-parse", "HEAD")
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
    # from the repository's root: the registry names the dataset metric's script relative to it
    print(f"next: cd {r.repo} && harbor run -d {r.name}@{r.version} --registry-path {REGISTRY_FILE} -a oracle"
          + "".join(f" {a}" for a in S.cpu_override_args())   # a command that runs on the host it ran on
          + ("" if r.git_url.startswith("file://") else f"  (after pushing {r.repo} to {r.git_url})"))
    return 0

if __name__ == "__main__":
    sys.exit(main())
