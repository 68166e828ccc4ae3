"""What `video-arena publish` reads and copies: the dataset make-harbor wrote (its marker, its task
folders, each task's video against its recorded digest, the offline validator's verdict), read
bounded, never through a symbolic link, never blocking on a FIFO; and the byte copy of a task folder.

PublishError is the one error of publish (video_arena/harbor/publish.py): every refusal is one line.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

from video_arena import paths
from video_arena import safe_io
from video_arena.digests import sha256_hasher
from video_arena.harbor import spec as S

#: The largest file of a task publish copies: the video (a long match at the render size is a few
#: hundred MB) and everything else far below it; a larger one (a sparse file, a runaway log) is refused.
MAX_TASK_FILE_BYTES = 4 << 30
#: The deepest path and the most entries a published task folder may hold (make-harbor writes three
#: levels and about a dozen files): a folder 1,500 levels deep or a million files is refused, never walked.
MAX_TASK_DEPTH = 16
MAX_TASK_ENTRIES = 10_000
VIDEO_REL = "environment/match.mp4"


class PublishError(RuntimeError):
    """The dataset cannot be published as asked; nothing was changed (the message says why)."""


# --------------------------------------------------------------------------------------------------
# reading what publish is given: bounded, never through a link, never blocking
# --------------------------------------------------------------------------------------------------
def json_object(path: Path) -> dict[str, Any]:
    """A JSON object read with the results contract's bound (no link, no FIFO, no device)."""
    doc, err = safe_io.read_json_object(path)
    if doc is None:
        raise PublishError(f"{path} is {err}")
    return doc


def lstat_or_none(path: Path) -> os.stat_result | None:
    """The entry at `path` itself (a link is not followed), None when there is none."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def no_link_below(base: Path, path: Path) -> None:
    """Every component of `path` below `base` is a real folder or file (no symbolic link)."""
    cur = base
    for part in path.relative_to(base).parts:
        cur = cur / part
        st = lstat_or_none(cur)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise PublishError(f"{cur} is a symbolic link (to {os.readlink(cur)!r}); publish writes and reads "
                               "only real folders and files")


def task_files(task: Path) -> list[tuple[str, int, int]]:
    """(relative path, size, mode) of every regular file of a task folder; raises PublishError for a
    symbolic link, a FIFO, a device or a socket anywhere in it, a file over the size cap, a folder deeper
    than MAX_TASK_DEPTH or more than MAX_TASK_ENTRIES entries (walked without recursion, so no depth can
    exhaust the stack)."""
    st = lstat_or_none(task)
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise PublishError(f"{task} is {'a symbolic link' if st is not None and stat.S_ISLNK(st.st_mode) else 'not a folder'}; "
                           "a published task is a real folder")
    out = []
    seen = 0
    pending = [(task, 0)]
    while pending:
        top, depth = pending.pop(0)
        with os.scandir(top) as it:
            names = sorted(e.name for e in it)
        seen += len(names)
        if seen > MAX_TASK_ENTRIES:
            raise PublishError(f"{task} holds more than {MAX_TASK_ENTRIES} files and folders; a published task "
                               "holds its video, instruction, tests and solution")
        for name in names:
            p = Path(top) / name
            st = os.lstat(p)
            rel = p.relative_to(task).as_posix()
            if stat.S_ISLNK(st.st_mode):
                raise PublishError(f"{p} is a symbolic link; a published task holds only folders and regular files")
            if stat.S_ISDIR(st.st_mode):
                if depth + 1 >= MAX_TASK_DEPTH:
                    raise PublishError(f"{task} has folders more than {MAX_TASK_DEPTH} levels deep ({rel[:80]}...); "
                                       "a published task holds its video, instruction, tests and solution")
                pending.append((p, depth + 1))
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
    if lstat_or_none(marker) is None:
        raise PublishError(f"{dataset} is not a dataset written by make-harbor (no {S.DATASET_MARKER})")
    doc, err = safe_io.read_json_object(marker)
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
    lost = sorted(n for n in names if lstat_or_none(dataset / n) is None)
    if lost:
        raise PublishError(f"{dataset}: the task folders differ from the marker's list; missing: {', '.join(lost[:3])}")
    for name in names:
        files = {rel: size for rel, size, _ in task_files(dataset / name)}
        case = dataset / name / "tests" / "case.json"
        doc = json_object(case)
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
    # deferred: the validator imports Harbor's models and lint (about 0.45 s of CPU); not with --no-validate
    from video_arena.harbor.validate import Validator, compose_available

    root = paths.tasks_root(tasks_root)
    reports, dproblems = Validator(root, compose_available()).check_dataset(dataset, progress=progress)
    bad = [r for r in reports if not r.ok]
    if bad or dproblems:
        first = dproblems[0] if dproblems else f"{bad[0].path.name}: {bad[0].problems[0]}"
        raise PublishError(f"the offline validator rejects {dataset} ({len(bad)} bad tasks"
                           f"{', dataset problems' if dproblems else ''}; first: {first}); "
                           f"see `video-arena validate {dataset}`")


def tree_bytes(root: Path) -> tuple[int, int]:
    """(all bytes, video bytes) of the regular files under `root`."""
    total = media = 0
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            n = p.stat().st_size
            total += n
            if p.name == "match.mp4":
                media += n
    return total, media
