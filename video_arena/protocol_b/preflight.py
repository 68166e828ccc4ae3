"""Preflight of the machine the agent runs on (docs/PROTOCOLS.md, "Preflight: nothing is installed for the agent").

The turn-1 prompt tells the agent that ffmpeg, Python and the video tools are installed; natively
the agent runs on this machine, so this machine must carry them.  Checked against the PATH the
agent will get (the runner's PATH minus entries inside the repository/tasks tree):

- missing `ffmpeg`, `ffprobe` or `python3`: a hard error before the first cell, because without them
  every cell still runs and still scores, and the result reads like a measurement;
- Python modules missing from *that* python3 (numpy scipy pandas PIL cv2 skimage imageio av
  matplotlib pytesseract tqdm), or a missing `tesseract`: warnings.

`--skip-preflight` turns the check off (an --agent-cmd that starts the agent in its own container).
Under isolation (isolation.py) the check runs inside the same namespaces as the agents (`wrap`), so
a tool or interpreter the agent cannot see (under a home folder not passed with --allow-path) is
reported as missing.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field

REQUIRED_TOOLS = ("ffmpeg", "ffprobe", "python3")
OPTIONAL_TOOLS = ("tesseract",)
PY_MODULES = ("numpy", "scipy", "pandas", "PIL", "cv2", "skimage", "imageio", "av", "matplotlib",
              "pytesseract", "tqdm")
INSTALL_HINT = (
    "install the toolset the prompt promises (the Harbor image's set): "
    "sudo apt-get install -y ffmpeg tesseract-ocr tesseract-ocr-eng; "
    "pip install numpy scipy pandas pillow opencv-python-headless scikit-image imageio "
    "imageio-ffmpeg av matplotlib pytesseract tqdm"
)

_PROBE = (
    "import importlib.util, json, sys\n"
    "mods = sys.argv[1:]\n"
    "missing = []\n"
    "for m in mods:\n"
    "    try:\n"
    "        if importlib.util.find_spec(m) is None: missing.append(m)\n"
    "    except Exception: missing.append(m)\n"
    "print(json.dumps({'missing': missing, 'version': sys.version.split()[0]}))\n"
)


@dataclass
class Preflight:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    tools: dict[str, str | None] = field(default_factory=dict)
    python_version: str | None = None
    missing_modules: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> dict:
        return {"errors": list(self.errors), "warnings": list(self.warnings), "tools": dict(self.tools),
                "python_version": self.python_version, "missing_modules": list(self.missing_modules)}


def _which_inside(wrap: list[str], tools, env: dict[str, str], timeout_s: float) -> dict[str, str | None]:
    script = 'for t; do p=$(command -v -- "$t") && printf "%s\\t%s\\n" "$t" "$p"; done; exit 0'
    try:
        proc = subprocess.run([*wrap, "/bin/sh", "-c", script, "sh", *tools], capture_output=True, text=True,
                              timeout=timeout_s, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return {t: None for t in tools}
    found = dict(line.split("\t", 1) for line in proc.stdout.splitlines() if "\t" in line)
    return {t: found.get(t) for t in tools}


def run_preflight(env: dict[str, str], timeout_s: float = 60.0, wrap: list[str] | None = None) -> Preflight:
    """Check the tools and modules an agent started with environment `env` would find (inside the
    isolation when `wrap`, the argv prefix that enters it, is given)."""
    pf = Preflight()
    path_env = env.get("PATH", "")
    if wrap:
        pf.tools.update(_which_inside(wrap, (*REQUIRED_TOOLS, *OPTIONAL_TOOLS), env, timeout_s))
    for tool in (*REQUIRED_TOOLS, *OPTIONAL_TOOLS):
        if not wrap:
            pf.tools[tool] = shutil.which(tool, path=path_env or "")
    missing = [t for t in REQUIRED_TOOLS if not pf.tools[t]]
    if missing:
        pf.errors.append(f"not on the agent's PATH: {', '.join(missing)}. Every cell would still run "
                         f"and score as if it were a measurement; {INSTALL_HINT}")
    for tool in OPTIONAL_TOOLS:
        if not pf.tools[tool]:
            pf.warnings.append(f"{tool} is not on the agent's PATH (the prompt says it is installed)")
    py = pf.tools.get("python3")
    if py:
        try:
            proc = subprocess.run([*(wrap or []), py, "-c", _PROBE, *PY_MODULES], capture_output=True,
                                  text=True, timeout=timeout_s, env=env, stdin=subprocess.DEVNULL)
            doc = json.loads(proc.stdout.strip().splitlines()[-1])
            pf.missing_modules = list(doc["missing"])
            pf.python_version = doc.get("version")
        except (OSError, subprocess.SubprocessError, ValueError, IndexError, KeyError) as exc:
            pf.warnings.append(f"could not list the Python modules of {py}: {exc!r}")
            pf.missing_modules = list(PY_MODULES)
        if pf.missing_modules:
            pf.warnings.append(f"{py} cannot import {', '.join(pf.missing_modules)} (the prompt says "
                               "they are installed)")
    return pf
