"""The git repository `video-arena publish` writes (docs/SECURITY.md, "Published datasets"): where it
may write (--out resolved, only a repository it created or one carrying its marker, never a folder of
another repository), every git command on the repository's own .git with no hook and none of the
caller's GIT_* variables, registry.json read and checked with Harbor's own model and client, the
commit checked against the copied files, and what a failure restores.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

from video_arena import paths
from video_arena import safe_io
from video_arena.harbor.publish_dataset import PublishError, lstat_or_none, no_link_below

REGISTRY_FILE = "registry.json"
#: The marker that says a repository was written by this command (so it may add versions to it).
REPO_MARKER = ".video-arena-publish.json"
REPO_FORMAT = "video-arena-publish/1"
ATTRIBUTES_FILE = ".gitattributes"
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "video-arena publish", "GIT_AUTHOR_EMAIL": "video-arena@localhost",
                "GIT_COMMITTER_NAME": "video-arena publish", "GIT_COMMITTER_EMAIL": "video-arena@localhost"}


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


def run_git(cmd: list[str], where: Path, what: str, input: str | None = None) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, env=_git_env(), input=input,
                       stdin=None if input else subprocess.DEVNULL)
    if p.returncode != 0:
        last = ((p.stderr or p.stdout).strip().splitlines() or ["no output"])[-1]
        raise PublishError(f"git {what} failed in {where}: {last}")
    return p.stdout.strip()


def git(repo: Path, *args: str, input: str | None = None) -> str:
    return run_git(["git", f"--git-dir={repo / '.git'}", f"--work-tree={repo}", "-c", f"core.hooksPath={os.devnull}",
                    "-C", str(repo), *args], repo, " ".join(args[:2]), input)


def load_registry(repo: Path) -> list[dict[str, Any]]:
    path = repo / REGISTRY_FILE
    if lstat_or_none(path) is None:
        return []
    try:
        data, size = safe_io.read_bounded(path, safe_io.MAX_RECORD_BYTES)
    except OSError as exc:
        raise PublishError(f"{path} is unreadable ({exc.strerror or exc})") from None
    if size > safe_io.MAX_RECORD_BYTES:
        raise PublishError(f"{path} is larger than {safe_io.MAX_RECORD_BYTES} bytes")
    try:
        rows = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise PublishError(f"{path} is not JSON ({str(exc)[:80]})") from None
    if not isinstance(rows, list):
        raise PublishError(f"{path} is not a Harbor registry (a JSON list of datasets)")
    # deferred: Harbor's registry models (about 0.2 s of CPU); only for an existing repository
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
    st = lstat_or_none(out)
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
    mst = lstat_or_none(marker)
    if mst is None or not stat.S_ISREG(mst.st_mode):
        raise PublishError(f"--out {out} exists and was not written by video-arena publish (no {REPO_MARKER}); "
                           "choose a new folder")
    gst = lstat_or_none(out / ".git")
    if gst is None or not stat.S_ISDIR(gst.st_mode):
        raise PublishError(f"--out {out} holds {REPO_MARKER} but no .git folder of its own: not a repository "
                           "publish wrote")
    doc, err = safe_io.read_json_object(marker)
    if doc is None or doc.get("format") != REPO_FORMAT:
        raise PublishError(f"{marker} is {err or f'not a {REPO_FORMAT} marker'}")
    return True


def check_write_paths(repo: Path, rel_base: Path) -> None:
    """No symbolic link on any path publish writes in an existing repository (a committed
    `datasets -> /elsewhere` would put the tasks, ground truth included, outside it)."""
    for rel in (REGISTRY_FILE, REPO_MARKER, ATTRIBUTES_FILE, rel_base.as_posix()):
        no_link_below(repo, repo / rel)
    for rel in (REGISTRY_FILE,):
        st = lstat_or_none(repo / rel)
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise PublishError(f"{repo / rel} is not a regular file")


class RepositoryChanges:
    """What publish changed in an existing repository, so that a failure restores exactly that: the
    branch's commit (its own commits are dropped), the folders and files it created, registry.json's
    bytes.  Nothing else is touched (never a clean of the work tree)."""

    def __init__(self, repo: Path, rel_base: Path):
        self.repo = repo
        self.head = git(repo, "rev-parse", "HEAD")
        reg = repo / REGISTRY_FILE
        self.registry = safe_io.read_bounded(reg, safe_io.MAX_RECORD_BYTES)[0] if lstat_or_none(reg) is not None else None
        self.created: list[Path] = []
        d = repo
        for part in rel_base.parts:
            d = d / part
            if lstat_or_none(d) is None:
                self.created.append(d)

    def restore(self) -> None:
        try:  # the branch and the index back to the commit publish found; the work tree is not touched
            git(self.repo, "reset", "-q", "--mixed", self.head)
        except PublishError:
            pass
        if self.created:
            shutil.rmtree(self.created[0], ignore_errors=True)
        reg = self.repo / REGISTRY_FILE
        if self.registry is None:
            if lstat_or_none(reg) is not None and not (reg.is_symlink() or reg.is_dir()):
                reg.unlink()
        else:
            safe_io.write_bytes_atomic(reg, self.registry)


def readable_mode() -> int:
    """0777 less the umask for folders (a clone source others can read), never 0700 by accident."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o777 & ~umask


def check_commit(repo: Path, commit: str, rel_base: Path, target: Path) -> None:
    """The commit the registry rows will name holds exactly the files copied from the validated dataset,
    byte for byte and with their executable bits: what Harbor clones is what was validated."""
    listing = git(repo, "ls-tree", "-r", "-z", commit, "--", rel_base.as_posix())
    committed = {}
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, _kind, blob = meta.split()
        committed[path] = (mode, blob)
    files = sorted(p for p in target.rglob("*") if p.is_file() and not p.is_symlink())
    rels = [(rel_base / p.relative_to(target)).as_posix() for p in files]
    blobs = git(repo, "hash-object", "--no-filters", "--stdin-paths",
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


def check_registry(path: Path, name: str, version: str, n_tasks: int) -> None:
    """Read the file back with Harbor's own registry client, as `harbor run --registry-path` will."""
    # deferred: Harbor's registry client (about 0.2 s of CPU), once registry.json is written
    import asyncio

    from video_arena.harbor_api.registry import JsonRegistryClient

    meta = asyncio.run(JsonRegistryClient(path=path).get_dataset_metadata(f"{name}@{version}"))
    if len(meta.task_ids) != n_tasks:
        raise PublishError(f"Harbor reads {len(meta.task_ids)} tasks for {name}@{version} from {path}, not {n_tasks}")
