"""Where the project's own resources are.

The toolkit is installed editable from a checkout (see README): the built-in tasks tree, the judge,
the Harbor templates, the image and the Harbor agents live at the checkout's top level, next to this
package.  Anything that needs one of them asks here, so a missing resource is one clear error.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

TASKS_ROOT_ENV = "VA_TASKS_ROOT"
MEDIA_ROOT_ENV = "VA_MEDIA_ROOT"


class ResourceMissing(FileNotFoundError):
    """A file the toolkit ships next to its package is not there (not an editable checkout?)."""


def repo_resource(*parts: str) -> Path:
    path = REPO_ROOT.joinpath(*parts)
    if not path.exists():
        raise ResourceMissing(
            f"{path} does not exist: the toolkit expects to run from a checkout of the repository "
            f"(pip install -e .), where {'/'.join(parts)} sits next to the video_arena package"
        )
    return path


def judge_path() -> Path:
    return repo_resource("judge", "judge.py")


def default_tasks_root() -> Path:
    return REPO_ROOT / "tasks"


def tasks_root(explicit: str | os.PathLike | None = None) -> Path:
    """The tasks tree: an explicit argument, else $VA_TASKS_ROOT, else the project's own tasks/."""
    if explicit:
        root = Path(explicit)
    elif os.environ.get(TASKS_ROOT_ENV):
        root = Path(os.environ[TASKS_ROOT_ENV])
    else:
        root = default_tasks_root()
    root = root.expanduser().resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"tasks root {root} is not a directory")
    return root


def media_root(tasks: Path, explicit: str | os.PathLike | None = None) -> Path:
    """Where <game>/media/<case_id>.mp4 live: explicit, else $VA_MEDIA_ROOT, else the tasks root."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    if os.environ.get(MEDIA_ROOT_ENV):
        return Path(os.environ[MEDIA_ROOT_ENV]).expanduser().resolve()
    return tasks
