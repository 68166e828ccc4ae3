"""Benchmark of a Protocol B sandbox's clean-up (video_arena.safe_tree.remove_tree, what `Sandbox.remove()`
runs) on the trees a hostile agent leaves: folders nested DEPTH deep, and FILES empty files in one
folder.  Each tree is built twice, the same way (mkdir / open in a loop, relative to a folder
descriptor); one is removed by remove_tree, the other by `rm -rf` (coreutils), and this prints the
wall and CPU time of each and their ratio, with the peak memory of the process.

    python benchmarks/sandbox_cleanup.py [--depth 100000] [--files 1000000] [--root DIR]

--root: where the trees are built (default: the system temp dir; a tmpfs such as /dev/shm measures
the CPU cost rather than the disk's).  Prints; never asserts.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from video_arena.safe_tree import remove_tree  # noqa: E402


def nested(top: Path, depth: int) -> None:
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        new = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = new
    os.close(fd)


def many_files(top: Path, files: int) -> None:
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for k in range(files):
        os.close(os.open(str(k), os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
    os.close(fd)


def timed(fn) -> tuple[float, float, object]:
    t0, c0 = time.monotonic(), time.process_time()
    out = fn()
    return time.monotonic() - t0, time.process_time() - c0, out


def rm_rf(path: Path) -> tuple[float, float]:
    t0 = time.monotonic()
    before = os.times()
    subprocess.run(["rm", "-rf", str(path)], check=True)
    after = os.times()
    return time.monotonic() - t0, (after.children_user - before.children_user) + (after.children_system -
                                                                                  before.children_system)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, default=100_000)
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--root", default=None)
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="va-cleanup-bench-", dir=a.root))
    print(f"trees in {work} ({shutil.disk_usage(work).free >> 30} GiB free); load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; Python {sys.version.split()[0]}")
    try:
        for name, build, n in (("nested folders", nested, a.depth), ("files in one folder", many_files, a.files)):
            if n <= 0:
                continue
            built, _, _ = timed(lambda: build(work / "ours", n))
            wall, cpu, result = timed(lambda: remove_tree(work / "ours", time_budget_s=3600))
            build(work / "rm", n)
            rm_wall, rm_cpu = rm_rf(work / "rm")
            print(f"{name}: {n}: built in {built:.1f} s; remove_tree {wall:.1f} s wall, {cpu:.1f} s CPU "
                  f"(removed={result.removed}, {result.entries} entries); rm -rf {rm_wall:.1f} s wall, "
                  f"{rm_cpu:.1f} s CPU; ratio {wall / max(rm_wall, 1e-9):.2f} x rm -rf's wall")
        print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MiB; "
              f"load average after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
