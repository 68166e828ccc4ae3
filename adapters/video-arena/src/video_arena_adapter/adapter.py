"""The adapter class of Harbor's layout.  It generates nothing itself: `video-arena make-harbor`
(video_arena/harbor/generate.py) writes the tasks from the task template (the repository's
harbor_templates/, linked here as task-template/); this class only turns Harbor's standard adapter
options into make-harbor's."""
from __future__ import annotations

from pathlib import Path

from video_arena.harbor import generate


class VideoArenaAdapter:
    def __init__(self, output_dir: Path, overwrite: bool = False, limit: int | None = None,
                 extra: list[str] | None = None):
        self.output_dir = Path(output_dir)
        self.overwrite = overwrite
        self.limit = limit
        self.extra = list(extra or [])

    def make_harbor_args(self) -> list[str]:
        """The `video-arena make-harbor` arguments this adapter run stands for."""
        args = ["--out", str(self.output_dir), *self.extra]
        if self.overwrite:
            args.append("--force")
        if self.limit is not None:
            args += ["--limit", str(self.limit)]
        return args

    def run(self) -> int:
        return generate.main(self.make_harbor_args())
