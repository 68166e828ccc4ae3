#!/usr/bin/env python3
"""The README's main job, timed from a fresh clone: what a new user waits for.

    sudo python3 benchmarks/fresh_main_job.py [--from-nothing] [--write-readme] [--keep]

Clones the checkout's HEAD into a temporary folder and runs the README's line marked `# main job`
there (read from the README, so the measurement follows the README), timing the whole and printing
each phase line of the job's own output with its time (setup, media per game, image, datasets,
validate, trials). The clone starts with no .venv, wheelhouse, debootstrap base, pip or uv cache. With
--from-nothing the Docker images the job builds (video-arena/base:latest and the debootstrap base)
and Docker's build cache are removed first, as on a fresh machine (for everyone on this machine).
Debian packages already installed stay installed. --write-readme puts the result in
benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
GOAL_S = 15 * 60
BEGIN, END = "<!-- fresh_main_job.py: begin (generated, do not edit) -->", "<!-- fresh_main_job.py: end -->"
PHASES = re.compile(r"^(setup: (venv|install|pip|apt|compose|done)|image: (building|done)|\w+: \d+ media re-rendered|media: |"
                    r"generate |validate |oracle-check (PASSED|FAILED)|docker: )")


def readme_command(readme: Path, marker: str = "main job") -> str:
    """The README's command on the line that ends with `# <marker>`."""
    for line in readme.read_text(encoding="utf-8").splitlines():
        if line.rstrip().endswith(f"# {marker}"):
            return line.split("#", 1)[0].strip()
    raise SystemExit(f"the README has no line marked '# {marker}'")


def fresh_clone(prefix: str) -> tuple[Path, Path, str]:
    """A temporary folder holding a clone of this checkout's HEAD: (folder, clone, short commit)."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    clone = work / "video-arena"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    return work, clone, head


def discard(work: Path, keep: bool) -> None:
    if keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


IMAGES = ("video-arena/base:latest", "video-arena/debian:bookworm")


def scrub(line: str, clone: Path) -> str:
    """A line of the job's output without this machine's paths: the clone as <clone>, the home as ~."""
    return line.replace(str(clone), "<clone>").replace(str(Path.home()), "~")


def remove_images() -> None:
    """The job's images and Docker's build cache removed, the daemon started first (with no daemon,
    `docker rmi` fails and the job would quietly reuse the images); stops when an image is still there."""
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        cli = REPO / ".venv" / "bin" / "video-arena"
        if not cli.is_file() or subprocess.run([str(cli), "docker", "start"], capture_output=True).returncode != 0:
            raise SystemExit("fresh_main_job.py: --from-nothing needs the Docker daemon to remove the images: "
                             "start it (video-arena docker start) and run again")
    for ref in IMAGES:
        subprocess.run(["docker", "rmi", "-f", ref], capture_output=True)
    subprocess.run(["docker", "builder", "prune", "-af"], capture_output=True)
    subprocess.run(["docker", "image", "prune", "-f"], capture_output=True)
    left = [ref for ref in IMAGES if subprocess.run(["docker", "image", "inspect", ref], capture_output=True).returncode == 0]
    if left:
        raise SystemExit(f"fresh_main_job.py: could not remove {', '.join(left)}: not a run from nothing")
    print(f"removed {', '.join(IMAGES)} and Docker's build cache", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from-nothing", action="store_true", help="remove the job's images and Docker's build cache first")
    ap.add_argument("--write-readme", action="store_true", help="record the result in benchmarks/README.md")
    ap.add_argument("--keep", action="store_true", help="keep the clone and its log")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("fresh_main_job.py: run as root (the main job installs Debian packages and starts dockerd)")
    cmd = readme_command(REPO / "README.md")
    work, clone, head = fresh_clone("va-fresh-")
    if a.from_nothing:
        remove_images()
    load_before = os.getloadavg()
    print(f"fresh clone of {head}; running: {cmd}", flush=True)
    t0 = time.monotonic()
    phases: list[tuple[float, str]] = []
    log = work / "main-job.log"
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.Popen(["bash", "-c", cmd], cwd=clone, env=dict(os.environ, PIP_NO_CACHE_DIR="1", UV_NO_CACHE="1", PYTHONUNBUFFERED="1"),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            fh.write(line)
            line = line.rstrip()
            if PHASES.match(line):
                phases.append((time.monotonic() - t0, scrub(line, clone)))
                print(f"  [{phases[-1][0]:5.0f} s] {line}", flush=True)
        rc = proc.wait()
    total = time.monotonic() - t0
    load_after = os.getloadavg()
    summary = (f"main job exit {rc} in {total:.0f} s ({total / 60:.1f} min) on {os.cpu_count()} cores, "
               f"{'images built from nothing' if a.from_nothing else 'Docker images reused when present'}; "
               f"goal 15 min: {total / GOAL_S:.2f} x")
    print(summary)
    if rc:
        print("the end of the job's log:\n" + "".join(log.read_text(encoding="utf-8").splitlines(True)[-30:]))
    if a.write_readme:
        from run_all import measured_line, write_readme

        text = "\n".join([
            measured_line(head, load_before, load_after,
                          f"`python3 benchmarks/fresh_main_job.py{' --from-nothing' if a.from_nothing else ''}`"), "",
            f"`{cmd}` from a fresh clone: **{summary}**.", "",
            "| at | line of the job's output |", "|---|---|",
            *[f"| {t:.0f} s | `{line.replace('|', '/')[:150]}` |" for t, line in phases]])
        write_readme(text, BEGIN, END, "## The README main job from a fresh clone")
    discard(work, a.keep)
    return rc


if __name__ == "__main__":
    sys.exit(main())
