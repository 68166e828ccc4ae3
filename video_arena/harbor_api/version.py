"""The Harbor release the toolkit is written against, and the gate of everything version-specific.

HARBOR_VERSION is the one place the version is written in the package; pyproject.toml pins the same
release (tests/unit/test_harbor_api.py holds the two equal).  What reaches into Harbor's private
internals (speedups.py, environments.py's capability facts) runs only when the installed Harbor is
this release; with any other it steps aside and Harbor's own code runs as it is.
"""
from __future__ import annotations

import functools
import importlib.metadata

#: The Harbor release pyproject.toml pins: the seam is written and tested against it.
HARBOR_VERSION = "0.26.0"


@functools.lru_cache(maxsize=1)
def installed_version() -> str | None:
    """The installed Harbor distribution's version (None when it cannot be read; read once)."""
    try:
        return importlib.metadata.version("harbor")
    except importlib.metadata.PackageNotFoundError:
        return None


def is_pinned_release() -> bool:
    """True only when the installed Harbor is HARBOR_VERSION (private internals may be used)."""
    return installed_version() == HARBOR_VERSION


def install_hint() -> str:
    return f"pip install harbor=={HARBOR_VERSION}"
