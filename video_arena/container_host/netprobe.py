"""A Harbor agent that probes the sandbox's network from inside a trial and writes nothing else.

    harbor run -p DATASET -a video_arena.container_host.netprobe:NetProbe -e podman ...

It runs one Python script in the agent's container as the agent's user: the network interfaces the
container has (/sys/class/net), its routes (/proc/net/route), a DNS lookup, TCP connections to
public addresses and to the host's usual gateway addresses, and a UDP send.  The result goes to the
trial's `agent/netprobe.json`; `offline(record)` is True only when the container has no interface
but `lo`, no route, and every attempt failed.  It leaves /app/answer.json alone (so the trial scores
0.0, like nop).
"""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from video_arena.harbor_api.agents import AgentContext, BaseAgent, BaseEnvironment

#: Run by python3 inside the sandbox (Debian's 3.11 in the image); prints one JSON object.
PROBE_SCRIPT = r'''
import json, os, socket
out = {"interfaces": sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else None}
try:
    out["routes"] = [l.split()[:3] for l in open("/proc/net/route").read().splitlines()[1:] if l.strip()]
except OSError as e:
    out["routes"] = str(e)
attempts = []
def tcp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.settimeout(3)
    try:
        s.connect((host, port)); attempts.append({"tcp": f"{host}:{port}", "ok": True})
    except OSError as e:
        attempts.append({"tcp": f"{host}:{port}", "ok": False, "error": f"{type(e).__name__}: {e}"})
    finally:
        s.close()
for host, port in (("1.1.1.1", 443), ("8.8.8.8", 53), ("151.101.0.223", 443), ("172.17.0.1", 22),
                   ("10.88.0.1", 22), ("192.168.1.1", 80)):
    tcp(host, port)
try:
    socket.setdefaulttimeout(3); info = socket.getaddrinfo("deb.debian.org", 80)
    attempts.append({"dns": "deb.debian.org", "ok": True, "answer": str(info[:1])})
except OSError as e:
    attempts.append({"dns": "deb.debian.org", "ok": False, "error": f"{type(e).__name__}: {e}"})
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"x", ("8.8.8.8", 53)); attempts.append({"udp": "8.8.8.8:53", "ok": True})
except OSError as e:
    attempts.append({"udp": "8.8.8.8:53", "ok": False, "error": f"{type(e).__name__}: {e}"})
out["attempts"] = attempts
print(json.dumps(out))
'''


def offline(record: dict[str, Any] | None) -> tuple[bool, str]:
    """(offline, why) from a probe record."""
    if not isinstance(record, dict):
        return False, "no probe record"
    ifaces = record.get("interfaces")
    if not isinstance(ifaces, list):
        return False, f"interfaces unknown ({ifaces!r})"
    if [i for i in ifaces if i != "lo"]:
        return False, f"interfaces besides lo: {ifaces}"
    if record.get("routes"):
        return False, f"routes: {record['routes']}"
    attempts = record.get("attempts") or []
    if not attempts:
        return False, "no attempt recorded"
    reached = [a for a in attempts if a.get("ok")]
    if reached:
        return False, f"reached: {reached}"
    return True, f"only lo, no route, {len(attempts)} attempts (TCP, DNS, UDP) all failed"


class NetProbe(BaseAgent):
    @staticmethod
    def name() -> str:
        return "video-arena-netprobe"

    def version(self) -> str | None:
        return "1"

    async def setup(self, environment: BaseEnvironment) -> None:
        return None

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        b64 = base64.b64encode(PROBE_SCRIPT.encode()).decode()
        res = await environment.exec(f"echo {b64} | base64 -d | python3 -I -", timeout_sec=120)
        raw = (res.stdout or "").strip().splitlines()
        record: dict[str, Any] | None = None
        for line in reversed(raw):
            try:
                record = json.loads(line)
                break
            except ValueError:
                continue
        doc = {"return_code": res.return_code, "record": record, "stdout_tail": raw[-5:]}
        doc["offline"], doc["why"] = offline(record)
        (Path(self.logs_dir) / "netprobe.json").write_text(json.dumps(doc, indent=1) + "\n")
        context.metadata = {"offline": doc["offline"], "why": doc["why"]}
