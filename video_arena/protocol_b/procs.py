"""The agent's processes: find all of them, kill all of them (Linux /proc).

Isolated cells (the default; isolation.py) are a PID namespace: `NamespaceCell` lists every host
process whose /proc/<pid>/ns/pid is the cell's, SIGTERMs them, and after the grace SIGKILLs the
namespace's init, whereupon the kernel kills the rest; nothing can hide from that list or leave the
namespace.  Everything below is the --no-isolation fallback, where the cell is a process tree.

An agent CLI is a launcher: its children (and their children, some of which daemonize with a
double fork and setsid) would keep running, and writing answer.json, after the cell was collected.
So at the wall-clock limit (and after an agent exits on its own) the runner kills every process that
belongs to the cell, and only then reads the answer.

Each cell's agent runs under its own shepherd (shepherd.py): the agent's parent and a child
subreaper, so every orphaned descendant of the agent is re-parented to the shepherd instead of init.
A process belongs to the cell when any of these holds (checked on every scan of /proc):

    group     its process group or session is the agent's (the agent starts as a session leader)
    marker    its environment carries $VIDEO_ARENA_B_CELL=<this cell's marker> (inherited through
              fork and exec unless a process wipes its environment)
    cwd       its working directory or root is inside the sandbox
    orphan    its parent is the cell's shepherd (a re-parented orphan, or the agent itself)
    fd        it holds a file descriptor open on a path inside the sandbox
    child     a descendant of any of the above

The shepherd itself is never a member (the runner closes its stdin afterwards and it exits).
Killing: SIGTERM to the group and to every member, a short grace, then rounds of SIGSTOP+SIGKILL
to the group and to every member still alive until a scan finds none.  Zombies count as gone (they
cannot run or write).  The time from the start of killing to the last process gone is measured.
The runner itself is a subreaper too (a fallback should a shepherd die): its final sweep kills
anything still carrying the run's marker or re-parented to it.
"""
from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
from dataclasses import dataclass, field

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

#: Serializes spawning an agent with reaping orphaned zombies, so the reaper never takes the exit
#: status of an agent's own process before subprocess.Popen has recorded it.
SPAWN_LOCK = threading.Lock()
_ACTIVE_LOCK = threading.Lock()
_ACTIVE_PIDS: set[int] = set()     # pids started with Popen (shepherds) that are not reaped yet


def set_child_subreaper(on: bool = True) -> bool:
    """Make this process the subreaper of its descendants (Linux >= 3.4); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def is_child_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(0)
        return libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value != 0
    except (OSError, AttributeError):
        return False


def boot_ticks_now() -> int:
    """Clock ticks since boot, the unit of a process's start time in /proc/<pid>/stat."""
    try:
        with open("/proc/uptime", "rb") as f:
            return int(float(f.read().split()[0]) * _CLK_TCK)
    except (OSError, ValueError, IndexError):  # no /proc: nothing to compare against anyway
        return 0


@dataclass(frozen=True)
class ProcStat:
    pid: int
    state: str
    ppid: int
    pgrp: int
    sid: int
    start_ticks: int


def read_stat(pid: int) -> ProcStat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        rest = data[data.rindex(b")") + 2:].split()
        return ProcStat(pid, rest[0].decode(), int(rest[1]), int(rest[2]), int(rest[3]), int(rest[19]))
    except (ValueError, IndexError):
        return None


def is_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    st = read_stat(pid)
    return st is not None and st.state not in ("Z", "X", "x")


def _pids() -> list[int]:
    try:
        return [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return []


def children_of(parent: int) -> list[int]:
    """The pids whose parent is `parent`, in any state (a zombie too)."""
    return [pid for pid in _pids() if (st := read_stat(pid)) is not None and st.ppid == parent]


def _live_procs(skip: set[int]):
    """(pid, stat) of every process that is alive (not a zombie) and not in `skip`."""
    for pid in _pids():
        if pid in skip:
            continue
        st = read_stat(pid)
        if st is not None and st.state not in ("Z", "X", "x"):
            yield pid, st


def _link_inside(link: str, prefix: str) -> bool:
    try:
        target = os.readlink(link)
    except OSError:
        return False
    return target == prefix.rstrip("/") or target.startswith(prefix)


def _env_has(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return needle in f.read().split(b"\0")
    except OSError:
        return False


def _fd_inside(pid: int, prefix: str) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    return any(_link_inside(f"/proc/{pid}/fd/{fd}", prefix) for fd in fds)


def register_active(pid: int) -> None:
    with _ACTIVE_LOCK:
        _ACTIVE_PIDS.add(pid)


def unregister_active(pid: int) -> None:
    with _ACTIVE_LOCK:
        _ACTIVE_PIDS.discard(pid)


def reap_orphan_zombies() -> list[int]:
    """waitpid() the zombies re-parented to this process (subreaper) that are not Popen's agents."""
    me, reaped = os.getpid(), []
    with SPAWN_LOCK:
        with _ACTIVE_LOCK:
            active = set(_ACTIVE_PIDS)
        for pid in _pids():
            if pid in active:
                continue
            st = read_stat(pid)
            if st and st.ppid == me and st.state == "Z":
                try:
                    os.waitpid(pid, os.WNOHANG)
                    reaped.append(pid)
                except ChildProcessError:
                    pass
    return reaped


@dataclass
class KillReport:
    reason: str                          # "limit" | "exited" | "interrupt"
    started: float                       # time.monotonic() when killing began
    gone_s: float | None = None          # from `started` to the last process gone
    members: dict[int, str] = field(default_factory=dict)   # every pid found, why it belonged
    term_sent: list[int] = field(default_factory=list)
    kill_sent: list[int] = field(default_factory=list)
    survivors: list[int] = field(default_factory=list)       # still alive when we gave up (bug)
    rounds: int = 0

    def as_dict(self) -> dict:
        return {"reason": self.reason, "gone_s": None if self.gone_s is None else round(self.gone_s, 3),
                "members": {str(k): v for k, v in sorted(self.members.items())},
                "sigterm": sorted(set(self.term_sent)), "sigkill": sorted(set(self.kill_sent)),
                "survivors": sorted(self.survivors), "rounds": self.rounds}


class CellProcesses:
    """Finds and kills the processes of one cell (see the module docstring)."""

    def __init__(self, agent_pid: int, shepherd_pid: int, sandbox: str, marker_env: str, marker: str):
        self.leader = agent_pid
        self.pgid = agent_pid           # the shepherd setsid()s the agent: pid == pgid == sid
        self.shepherd = shepherd_pid
        self.sandbox = os.path.realpath(sandbox).rstrip("/") + "/"
        self.needle = f"{marker_env}={marker}".encode()
        self.me = os.getpid()

    def scan(self) -> dict[int, str]:
        """Live (non-zombie) processes of the cell, each with the first reason that matched."""
        skip = {self.me, self.shepherd}
        with _ACTIVE_LOCK:
            skip |= _ACTIVE_PIDS  # every cell's shepherd
        stats: dict[int, ProcStat] = {}
        found: dict[int, str] = {}
        for pid, st in _live_procs(skip):
            stats[pid] = st
            if st.pgrp == self.pgid or st.sid == self.pgid:
                found[pid] = "group"
            elif st.ppid == self.shepherd:
                found[pid] = "orphan"
            elif _env_has(pid, self.needle):
                found[pid] = "marker"
            elif (_link_inside(f"/proc/{pid}/cwd", self.sandbox)
                  or _link_inside(f"/proc/{pid}/root", self.sandbox)):
                found[pid] = "cwd"
            elif _fd_inside(pid, self.sandbox):
                found[pid] = "fd"
        changed = True
        while changed:  # descendants of members
            changed = False
            for pid, st in stats.items():
                if pid not in found and st.ppid in found:
                    found[pid] = "child"
                    changed = True
        return found

    def _signal(self, pids, sig) -> list[int]:
        """Signal the agent's group and each pid; returns the pids signalled."""
        sent = []
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in pids:
            if pid in (self.me, self.shepherd):
                continue
            try:
                os.kill(pid, sig)
                sent.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
        return sent

    @staticmethod
    def _note(rep: "KillReport", members: dict[int, str]) -> None:
        for pid, why in members.items():  # the first reason found is the one recorded
            rep.members.setdefault(pid, why)

    def kill_all(self, reason: str, grace_s: float, started: float | None = None,
                 give_up_s: float = 30.0) -> KillReport:
        """SIGTERM everything, wait up to `grace_s`, SIGKILL whatever is left until none is found."""
        rep = KillReport(reason=reason, started=time.monotonic() if started is None else started)
        members = self.scan()
        self._note(rep, members)
        rep.term_sent = self._signal(members, signal.SIGTERM)
        grace_end = time.monotonic() + max(0.0, grace_s)
        while True:
            members = self.scan()
            self._note(rep, members)
            if not members or time.monotonic() >= grace_end:
                break
            time.sleep(0.02)
        give_up = time.monotonic() + give_up_s
        while members:
            rep.rounds += 1
            # Freeze first so nothing forks between the scan and the kill, then kill.
            self._signal(members, signal.SIGSTOP)
            rep.kill_sent += self._signal(members, signal.SIGKILL)
            time.sleep(0.01)
            members = self.scan()
            self._note(rep, members)
            if members and time.monotonic() > give_up:
                rep.survivors = sorted(members)
                break
        rep.gone_s = time.monotonic() - rep.started
        return rep


def final_sweep(run_marker_prefix: str, marker_env: str, run_start_ticks: int) -> list[int]:
    """At the end of a run: SIGKILL any process still carrying this run's marker, or re-parented to
    the runner after the run started (a stray no cell could claim).  Returns the pids killed."""
    me, killed = os.getpid(), []
    prefix = f"{marker_env}={run_marker_prefix}".encode()
    for _ in range(50):
        found = []
        with _ACTIVE_LOCK:
            skip = {me} | _ACTIVE_PIDS
        for pid, st in _live_procs(skip):
            hit = st.ppid == me and st.start_ticks >= run_start_ticks
            if not hit:
                try:
                    with open(f"/proc/{pid}/environ", "rb") as f:
                        hit = any(v.startswith(prefix) for v in f.read().split(b"\0"))
                except OSError:
                    hit = False
            if hit:
                found.append(pid)
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)
    reap_orphan_zombies()
    return sorted(set(killed))


# --------------------------------------------------------------------------------------------------
# isolated cells (isolation.py): the cell is a PID namespace
# --------------------------------------------------------------------------------------------------
def pid_namespace(pid: int) -> str | None:
    """The PID namespace of `pid` as `pid:[inode]` (None when it is gone)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def namespace_members(ns: str) -> list[int]:
    """Live (non-zombie) host pids whose PID namespace is `ns`: read from outside, so nothing inside
    can hide from it (a process cannot leave its PID namespace)."""
    out = []
    for pid in _pids():
        if pid_namespace(pid) == ns and is_alive(pid):
            out.append(pid)
    return out


class NamespaceCell:
    """Kills an isolated cell: every process in its PID namespace, whose init is host pid `init_pid`."""

    def __init__(self, init_pid: int, ns: str | None):
        self.init_pid, self.ns = init_pid, ns

    def members(self) -> list[int]:
        return namespace_members(self.ns) if self.ns else []

    def kill_all(self, reason: str, grace_s: float, started: float | None = None,
                 give_up_s: float = 30.0) -> KillReport:
        """SIGTERM every process but init, wait up to `grace_s` for them, then SIGKILL init: the
        kernel kills everything left in the namespace.  Returns once none is left (checked from
        outside), with the time from `started` to the last process gone."""
        rep = KillReport(reason=reason, started=time.monotonic() if started is None else started)
        members = self.members()
        for pid in members:
            rep.members.setdefault(pid, "pidns")
        for pid in members:
            if pid != self.init_pid:
                try:
                    os.kill(pid, signal.SIGTERM)
                    rep.term_sent.append(pid)
                except (ProcessLookupError, PermissionError):
                    pass
        grace_end = time.monotonic() + max(0.0, grace_s)
        while time.monotonic() < grace_end:
            members = self.members()
            if not [p for p in members if p != self.init_pid]:
                break
            time.sleep(0.02)
        give_up = time.monotonic() + give_up_s
        while True:
            members = self.members()
            for pid in members:
                rep.members.setdefault(pid, "pidns")
            if not members:
                break
            rep.rounds += 1
            # init first: its death takes the whole namespace down (only pids just seen in it)
            for pid in sorted(members, key=lambda p: p != self.init_pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                    rep.kill_sent.append(pid)
                except (ProcessLookupError, PermissionError):
                    pass
            if time.monotonic() > give_up:
                rep.survivors = sorted(self.members())
                break
            time.sleep(0.005)
        rep.gone_s = time.monotonic() - rep.started
        return rep
