"""The Video-Arena adapter in Harbor's adapter layout: one Harbor task per case of a tasks tree.

Thin on purpose: the toolkit's generator (`video_arena/harbor/generate.py`, the same code as
`video-arena make-harbor`) writes the tasks from the templates in `template/` (the repository's
`harbor_templates/`: this folder links there, so the adapter and the toolkit share one copy).
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from video_arena.harbor import generate  # noqa: E402


class VideoArenaAdapter:
    """Harbor's adapter interface: `run()` writes the tasks into `output_dir`."""

    def __init__(self, output_dir: Path, *, protocol: str = "B", net: str = "strict", media: str = "mount",
                 overwrite: bool = False, limit: int | None = None, games: list[str] | None = None,
                 tasks_root: Path | None = None) -> None:
        self.output_dir = Path(output_dir)
        self.protocol, self.net, self.media = protocol, net, media
        self.overwrite, self.limit, self.games, self.tasks_root = overwrite, limit, games, tasks_root

    def argv(self) -> list[str]:
        """The `video-arena make-harbor` arguments this adapter runs."""
        out = ["--out", str(self.output_dir), "--protocol", self.protocol, "--net", self.net, "--media", self.media,
               "--no-progress"]
        if self.overwrite:
            out.append("--force")
        if self.limit is not None:
            out += ["--limit", str(self.limit)]
        if self.games:
            out += ["--games", ",".join(self.games)]
        if self.tasks_root is not None:
            out += ["--tasks-root", str(self.tasks_root)]
        return out

    def run(self) -> int:
        return generate.main(self.argv())
