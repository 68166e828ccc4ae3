"""Enforced isolation of a Protocol B agent: Linux namespaces through bubblewrap (`bwrap`).

Each cell's agent command runs under

    bwrap --unshare-pid --die-with-parent --new-session --cap-drop ALL ...

- **its own PID namespace.**  bwrap's init is PID 1 in it; when the agent command (PID 2) exits, or
  the runner kills PID 1 at the wall-clock limit, or the runner dies (--die-with-parent), the kernel
  kills every process left in the namespace.  A fork/setsid walker cannot outlive its cell: a
  process cannot leave its PID namespace, and the runner checks from outside (every host process
  whose /proc/<pid>/ns/pid is the cell's) that none is left.
- **its own mount namespace, built as an allow-list.**  Visible: the read-only system directories
  (SYSTEM_DIRS), a fresh /proc of its own PID namespace (never the runner's /proc/<pid>/cwd or
  environ), a minimal /dev, a private tmpfs on /tmp and on $HOME, the sandbox (read-write), its
  prompt.txt (read-only), and the paths the user allows with `--allow-path PATH[:ro|rw]` for the
  agent's own installation and state.  Nothing else of the host exists inside: not the repository,
  the tasks tree, other copies of it, Harbor datasets, the results folder, home folders or the
  host's /tmp.  A hard link from answer.json to a ground-truth file cannot be made (the file is
  not there, and link() across mounts fails with EXDEV).
- **no capabilities** (even when the runner is root: the agent cannot mount, mknod or ptrace out).
- **the network is kept**: the agent must reach its model.  The egress rule stays audited.

The agent's Python (a venv or pyenv under a home folder) is reachable only if allowed: a venv's
`bin/python` is a symlink to its base interpreter, so allow both the venv and the base install.
`isolation_probe()` runs `bwrap ... true` once before the first cell; where namespaces cannot be
made, run-b refuses to start unless `--no-isolation` is passed.  run.json records
`isolation` (mode, the mounts, what was allowed) either way.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
import shlex

#: Read-only system directories every agent sees (a symlink, as /bin -> usr/bin, stays a symlink).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
BWRAP_FLAGS = ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session",
               "--cap-drop", "ALL")
MODE_BWRAP, MODE_NONE = "bwrap", "none"


class IsolationError(ValueError):
    """The isolation cannot be built as asked (a bad --allow-path, no bwrap, no namespaces)."""


@dataclass(frozen=True)
class Allowed:
    path: Path
    mode: str  # "ro" | "rw"

    def as_dict(self) -> dict[str, str]:
        return {"path": str(self.path), "mode": self.mode}


def parse_allow(spec: str) -> Allowed:
    """`PATH`, `PATH:ro` or `PATH:rw` (default ro); the path must exist; resolved (symlinks followed)."""
    path, mode = spec, "ro"
    for suffix in (":ro", ":rw"):
        if spec.endswith(suffix):
            path, mode = spec[: -len(suffix)], suffix[1:]
    if not path:
        raise IsolationError(f"--allow-path {spec!r}: no path")
    p = Path(path).expanduser()
    if not p.is_absolute():
        p = Path.cwd() / p
    if not p.exists():
        raise IsolationError(f"--allow-path {path}: no such file or directory")
    return Allowed(Path(os.path.realpath(p)), mode)


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def check_allowed(allowed: list[Allowed], forbidden: list[Path], sandbox_base: Path) -> None:
    """IsolationError when an allowed path would show the agent a forbidden tree (the repository, the
    tasks tree, the media root, the results folder) or other cells' sandboxes, or when a forbidden
    tree lies inside a system directory every agent sees."""
    for a in allowed:
        for f in forbidden:
            if _within(a.path, f) or _within(f, a.path):
                raise IsolationError(
                    f"--allow-path {a.path} {'is inside' if _within(a.path, f) else 'contains'} {f} "
                    "(the repository, tasks tree, media root or results folder): the agent would see it. "
                    "Allow only the agent's own installation and state")
        if _within(sandbox_base, a.path) or _within(a.path, sandbox_base):
            raise IsolationError(f"--allow-path {a.path} overlaps the sandbox root {sandbox_base}: the "
                                 "agent would see other cells' sandboxes")
    for f in [*forbidden, sandbox_base]:
        for d in SYSTEM_DIRS:
            if _within(Path(os.path.realpath(f)), Path(os.path.realpath(d))) and not os.path.islink(d):
                raise IsolationError(f"{f} lies inside the system directory {d}, which every agent sees "
                                     "read-only; move it elsewhere")


@dataclass
class Isolation:
    mode: str                                   # MODE_BWRAP | MODE_NONE
    allowed: list[Allowed] = field(default_factory=list)
    bwrap: str | None = None
    home: str | None = None                     # a private tmpfs here ($HOME of the agent)

    def record(self) -> dict:
        """The `isolation` key of run.json."""
        if self.mode == MODE_NONE:
            return {"mode": MODE_NONE, "enforced": False, "allowed": [],
                    "note": "--no-isolation: the agent ran with the runner's view of the host"}
        return {"mode": MODE_BWRAP, "enforced": True, "bwrap": self.bwrap, "pid_namespace": True,
                "mount_namespace": "allow-list", "network": "host", "capabilities": "none",
                "system_dirs": [d for d in SYSTEM_DIRS if os.path.lexists(d)],
                "tmpfs": ["/tmp"] + ([self.home] if self.home else []),
                "allowed": [a.as_dict() for a in self.allowed]}

    def mount_args(self, rw: list[Path] = (), ro: list[Path] = ()) -> list[str]:
        """bwrap arguments building the allow-list view (without the command)."""
        args: list[str] = list(BWRAP_FLAGS)
        for d in SYSTEM_DIRS:
            if os.path.islink(d):
                args += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                args += ["--ro-bind", d, d]
        resolv = os.path.realpath("/etc/resolv.conf")  # a symlink into /run (systemd-resolved)
        if os.path.exists(resolv) and not any(_within(Path(resolv), Path(d)) for d in SYSTEM_DIRS):
            args += ["--ro-bind", resolv, resolv]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        if self.home:
            args += ["--tmpfs", self.home]
        for a in self.allowed:
            args += ["--bind" if a.mode == "rw" else "--ro-bind", str(a.path), str(a.path)]
        for p in rw:
            args += ["--bind", str(p), str(p)]
        for p in ro:
            args += ["--ro-bind", str(p), str(p)]
        return args


def _home_tmpfs() -> str | None:
    home = os.environ.get("HOME", "")
    if not home or not os.path.isabs(home):
        return None
    home = os.path.realpath(home)
    if home == "/" or any(_within(Path(home), Path(d)) for d in SYSTEM_DIRS) or _within(Path("/tmp"), Path(home)):
        return None
    return home


def make_isolation(no_isolation: bool, allow_specs: list[str], forbidden: list[Path],
                   sandbox_base: Path) -> Isolation:
    """The run's isolation, probed; IsolationError (with the reason) when it cannot be had."""
    if no_isolation:
        return Isolation(MODE_NONE)
    allowed = [parse_allow(s) for s in allow_specs]
    check_allowed(allowed, forbidden, sandbox_base)
    bwrap = shutil.which("bwrap")
    if not bwrap:
        raise IsolationError("bubblewrap (bwrap) is not installed, so the agent cannot be isolated "
                             "(sudo apt-get install -y bubblewrap); pass --no-isolation to run without it, "
                             "recorded in run.json")
    iso = Isolation(MODE_BWRAP, allowed, bwrap, _home_tmpfs())
    err = isolation_probe(iso, sandbox_base)
    if err:
        raise IsolationError(f"namespaces cannot be made here ({err}); the agent cannot be isolated. "
                             "Pass --no-isolation to run without it (recorded in run.json)")
    return iso


def namespaces_available() -> str | None:
    """None when this machine can isolate an agent, else why not (for tests and diagnostics)."""
    try:
        make_isolation(False, [], [], Path("/tmp"))
    except IsolationError as exc:
        return str(exc)
    return None


def isolation_probe(iso: Isolation, sandbox_base: Path) -> str | None:
    """None when `bwrap <the run's mounts> true` works, else its error."""
    argv = [iso.bwrap, *iso.mount_args(ro=[sandbox_base]), "--chdir", str(sandbox_base), "true"]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if p.returncode != 0:
        return (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
    return None


#: Run inside the isolation with argv: PROGRAM PATH...; prints `noprog` when PROGRAM is not a command
#: there and `hidden<TAB>PATH` for each PATH that does not exist there.
_VISIBLE_SCRIPT = ('[ -z "$1" ] || command -v -- "$1" >/dev/null 2>&1 || echo noprog; shift; '
                   'for p; do [ -e "$p" ] || printf "hidden\\t%s\\n" "$p"; done; exit 0')


def _script_of(words: list[str], program: str, skip_under: Path) -> list[str]:
    """The script the program is given, when it is plainly a host file: the first word after the program
    that is not an option (`python3 -u ~/agent.py ...`, `node /opt/a/cli.js ...`).  Only that one: the
    other words are the agent's own arguments (a path there may be anything, even a copy of ground
    truth an agent must not see, and is never suggested for --allow-path)."""
    if not program or program not in words:
        return []
    for w in words[words.index(program) + 1:]:
        if w.startswith("-"):
            continue
        if not w.startswith(("/", "~")):
            return []
        p = os.path.expanduser(w)
        return [p] if os.path.isfile(p) and not _within(Path(os.path.abspath(p)), skip_under) else []
    return []


def agent_command_problem(iso: Isolation, command: str, program: str, env: dict[str, str],
                          sandbox_base: Path, forbidden: list[Path], fake_sandbox: Path) -> str | None:
    """Before the first cell: None when the agent command's program and the script it is given (see
    `_script_of`) are visible inside the isolation, else one line saying what to allow or move (and
    why).  `command` is the template filled with `fake_sandbox` for {sandbox}/{prompt}; `program` is its
    first word ("" when it cannot be read plainly: then nothing is checked)."""

    if iso.mode != MODE_BWRAP:
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    paths = _script_of(words, program, fake_sandbox)
    if not program:
        return None
    argv = [iso.bwrap, *iso.mount_args(), "--chdir", "/tmp", "--", "/bin/sh", "-c", _VISIBLE_SCRIPT, "sh",
            program, *paths]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None  # the probe itself failed: the cells will say why
    hidden = [ln.split("\t", 1)[1] for ln in p.stdout.splitlines() if ln.startswith("hidden\t")]
    missing_prog = "noprog" in p.stdout.split()
    if not hidden and not missing_prog:
        return None
    fixes = []
    if missing_prog:
        host = program if "/" in program else shutil.which(program, path=env.get("PATH"))
        if host and os.path.exists(host):
            fixes.append(_fix_for(program, host, sandbox_base, forbidden, installation=True))
        else:
            fixes.append(f"{program}: not found inside the isolation nor on the host's PATH")
    fixes += [_fix_for(h, h, sandbox_base, forbidden, installation=False) for h in hidden if h != program]
    return "the agent command cannot run inside the isolation (every cell would be a harness_error): " + "; ".join(fixes)


def _fix_for(name: str, host: str, sandbox_base: Path, forbidden: list[Path], installation: bool) -> str:
    real = Path(os.path.realpath(host))
    what = f"{name} ({real})" if str(real) != name else name
    for p in dict.fromkeys((Path(os.path.abspath(host)), real)):  # the path as named, and where it leads
        if _within(p, sandbox_base) or _within(sandbox_base, p):
            return (f"{what} is under the sandbox root {sandbox_base}: move it elsewhere (that folder cannot be "
                    "allowed: every cell's sandbox is made there, so an agent allowed it could read the other "
                    "cells' sandboxes)")
        for f in forbidden:
            if _within(p, f) or _within(f, p):
                return (f"{what} is inside {f} (the repository, tasks tree, media root or results folder), "
                        "which an agent may never see: move it (or install it) elsewhere")
    target = real.parent if installation else real
    if installation and target.name == "bin" and target.parent != Path("/"):
        target = target.parent  # an installation's root (a venv, ~/.local), not only its bin/
    return f"{what} is hidden: allow it with --allow-path {target}:ro"
