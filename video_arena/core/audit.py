"""Egress audit of a Protocol B transcript (docs/PROTOCOLS.md, "Egress audit: the transcript convention").

The prompt forbids installs, downloads, external services and models, and looking the match up.
That is audited, not enforced: after the cell, the agent's transcript (the command's captured
stdout and stderr) is scanned for those actions.  Two properties:

1. **Patterns are anchored to real command syntax.**  `pip install <pkg>`, `apt-get install`,
   `npm install`, `conda install`, `curl`/`wget` followed by a URL-ish token, `git clone <url>`,
   a URL of a game-record site or a search engine, a web-search/fetch tool call.  A bare word
   ("curl is not available offline") matches nothing.
2. **Only agent-authored lines are scanned, never tool output.**  A library's error message quoted
   in a tool result ("run: pip install opencv-python") is not the agent's action.

Which lines are agent-authored (the transcript convention, docs/PROTOCOLS.md):

JSON lines (JSONL, as agent CLIs print with their JSON output modes).  A line that parses as a
JSON object is classified by its role:
  - agent-authored: `{"type": "assistant", "message": {...}}` (Claude Code `--output-format
    stream-json`), any object whose `role` (or `message.role`) is `assistant`/`agent`/`model`
    (OpenAI-style messages, with `tool_calls`), Codex `exec --json` item events whose item type is
    `command_execution` (its `command`, never its `aggregated_output`), `agent_message`/
    `assistant_message`/`reasoning` (its `text`), `mcp_tool_call` or `web_search`;
  - everything else (role/type `user`, `tool`, `system`, `result`, tool_result blocks, command
    output fields) is tool output or metadata and is not scanned.
  Within agent-authored objects, tool-call inputs (commands, code, file contents the agent writes)
  are **actions**; text/thinking/reasoning is **message**.
Plain-text lines (anything that is not a JSON object):
  - `$ COMMAND` or `[agent] $ COMMAND`: a shell command the agent issued (action);
  - `[agent] TEXT`: the agent's own words (message);
  - `[tool] ...` opens tool output: it and every following line up to the next `[agent]` line are
    output, even lines that start with `$ `;
  - every other line is output/noise and is not scanned.

Verdict: `flagged` when a rule matches an **action**; matches inside the agent's messages (prose,
reasoning quoting a command) are listed as `mentions` and do not flag; `clean` when agent-authored
actions or messages were seen and no action matched; `unaudited` when the transcript holds no
agent-authored line at all (nothing could be checked: never read that as clean).

Turns: the agent may report the turns it used with a JSON line `{"turns": N}` (any line, the last
one wins); Claude Code's final `{"type": "result", "num_turns": N}` is read the same way.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from video_arena import paths
from video_arena.core.tasks import list_games, load_game

AGENT_ROLES = {"assistant", "agent", "model"}
CODEX_ACTION_ITEMS = {"command_execution", "mcp_tool_call", "file_change", "web_search"}
CODEX_MESSAGE_ITEMS = {"agent_message", "assistant_message", "reasoning"}
MAX_MATCHES = 50
#: the audit's `convention` key: how the transcript was read (docs/PROTOCOLS.md, the egress audit)
TRANSCRIPT_CONVENTION = "video-arena-transcript/1"
MAX_TEXT = 300

# A command word must not be glued to a preceding word/path character ("mypip install" is not pip).
_W = r"(?<![\w./-])"
# Options, with or without a value ("-q", "--depth 1", "--index-url=..."); backtracking gives a value back.
_OPTS = r"(?:\s+-{1,2}[\w-]+(?:=\S+|\s+[^\s-]\S*)?)*"
_URLISH = (r"""['"]?(?:(?:https?|ftps?|s3|gs)://\S|www\.[\w-]+\.\S|"""
           r"""(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?(?:/|\b)|[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}(?::\d+)?/)""")
#: Sites that hold any game's matches (videos) and search engines; each game's own record sites are in
#: its game.toml (`[audit] match_sites`), read from the checkout's tasks tree, which holds every game's
#: definition as `video-arena games sync` writes it (a test holds the copies to the plugins' own).
GENERIC_SITES = (
    r"youtube\.com|youtu\.be|"
    r"google\.[a-z.]+/search|bing\.com/search|duckduckgo\.com|search\.yahoo\.com"
)


def match_sites(tasks_root: Path | None = None) -> tuple[str, ...]:
    """Every game's `[audit] match_sites`, once each, in game order (the checkout's tasks tree by default)."""
    root = tasks_root or paths.default_tasks_root()
    return tuple(dict.fromkeys(site for game in list_games(root) for site in load_game(game, root).match_sites))


MATCH_SITES = "|".join([*(re.escape(site) for site in match_sites()), GENERIC_SITES])

RULES: list[tuple[str, re.Pattern[str]]] = [
    ("pip_install", re.compile(
        _W + r"(?:python[\d.]*\s+-m\s+)?(?:pip[\d.]*|uv\s+pip|pipx)" + _OPTS + r"\s+(?:install|download)\b" + _OPTS
        + r"\s+['\"]?[\w.\[\]-]")),
    ("pip_install", re.compile(_W + r"(?:uv\s+(?:add|tool\s+install)|poetry\s+add)" + _OPTS + r"\s+[\w.-]")),
    ("system_install", re.compile(
        _W + r"(?:sudo\s+(?:-\S+\s+)*)?(?:apt-get|apt|aptitude|yum|dnf|zypper)" + _OPTS
        + r"\s+(?:install|reinstall|update|upgrade|dist-upgrade|full-upgrade|download|source)\b")),
    ("system_install", re.compile(_W + r"(?:apk\s+add|brew\s+install|snap\s+install|port\s+install|dpkg\s+-i)\b")),
    ("npm_install", re.compile(_W + r"(?:npm|pnpm)" + _OPTS + r"\s+(?:i|install|add|ci)\b")),
    ("npm_install", re.compile(_W + r"(?:yarn(?:\s+global)?\s+add|npx|bunx)" + _OPTS + r"\s+@?[\w-]")),
    ("conda_install", re.compile(_W + r"(?:conda|mamba|micromamba)" + _OPTS + r"\s+(?:install|create|env\s+create)\b")),
    ("other_install", re.compile(_W + r"(?:cargo\s+install|gem\s+install|go\s+(?:install|get))" + _OPTS + r"\s+\S")),
    ("other_install", re.compile(r"\binstall\.packages\s*\(")),
    ("download", re.compile(_W + r"(?:curl|wget|aria2c)\b[^\n;&|]*?[\s=]" + _URLISH)),
    ("download", re.compile(
        r"\b(?:urlopen|urlretrieve|requests\.(?:get|post|head|request)|httpx\.(?:get|post|stream)|"
        r"urllib3?\.\w+|aiohttp\.\w+)\s*\([^)]*?['\"](?:https?|ftp)://")),
    ("model_download", re.compile(
        r"(?:huggingface-cli\s+download|\bhf\s+download|snapshot_download\s*\(|hf_hub_download\s*\(|"
        r"torch\.hub\.load\s*\(|ollama\s+pull)")),
    ("git_clone", re.compile(
        _W + r"git" + _OPTS + r"\s+(?:clone|fetch|pull|ls-remote)" + _OPTS + r"\s+['\"]?(?:\w+://|[\w.-]+@[\w.-]+:)")),
    ("remote_shell", re.compile(_W + r"(?:ssh|scp|sftp|rsync|nc|ncat|telnet)" + _OPTS + r"\s+(?:\S+\s+)*?[\w.-]+@[\w.-]+")),
    ("match_lookup", re.compile(r"(?<![\w.-])(?:https?://)?(?:[\w-]+\.)*(?:" + MATCH_SITES + r")(?!\w)", re.I)),
]
WEB_TOOL = re.compile(r"(?i)(?:web[_ -]?(?:search|fetch|browse)|browser|fetch_url|http_request|"
                      r"google_search|search_web|url_fetch)")


@dataclass
class Segment:
    stream: str
    line: int          # 1-based line number in the stream's log
    kind: str          # "action" | "message"
    text: str
    tool: str | None = None


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (tool-call inputs are nested objects)."""
    if isinstance(value, str):
        # Tool-call arguments often arrive as a JSON string (OpenAI function calling).
        s = value.strip()
        if s[:1] in "{[" and len(s) > 1:
            try:
                yield from _strings(json.loads(s))
                return
            except (ValueError, RecursionError):  # nested past the parser's limit: read as text
                pass
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _content_segments(content: Any) -> Iterator[tuple[str, str, str | None]]:
    """(kind, text, tool name) of an agent message's content (a string or a list of blocks)."""
    if isinstance(content, str):
        yield "message", content, None
        return
    if not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, str):
            yield "message", block, None
            continue
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype in ("text", "output_text"):
            yield "message", str(block.get("text", "")), None
        elif btype in ("thinking", "reasoning"):
            yield "message", str(block.get("thinking") or block.get("text") or ""), None
        elif btype in ("tool_use", "server_tool_use", "function_call", "tool_call"):
            name = str(block.get("name") or "")
            payload = block.get("input", block.get("arguments", {}))
            yield "action", "\n".join(_strings(payload)), name
        # tool_result and anything else: output, not scanned


def _json_segments(obj: dict[str, Any]) -> tuple[str, list[tuple[str, str, str | None]]]:
    """('agent'|'tool', segments) for one JSON transcript line."""
    item = obj.get("item")
    if isinstance(item, dict):  # Codex exec --json
        itype = item.get("type") or item.get("item_type")
        if itype == "command_execution":
            cmd = item.get("command")
            cmd = " ".join(map(str, cmd)) if isinstance(cmd, list) else str(cmd or "")
            return "agent", [("action", cmd, None)]
        if itype == "mcp_tool_call":
            name = f"{item.get('server', '')}.{item.get('tool', '')}"
            return "agent", [("action", "\n".join(_strings(item.get("arguments", {}))), name)]
        if itype == "web_search":
            return "agent", [("action", str(item.get("query", "")), "web_search")]
        if itype == "file_change":
            return "agent", [("action", "\n".join(_strings(item.get("changes", []))), None)]
        if itype in CODEX_MESSAGE_ITEMS:
            return "agent", [("message", str(item.get("text", "")), None)]
        return "tool", []
    msg = obj.get("message") if isinstance(obj.get("message"), dict) else None
    role = obj.get("role") or (msg or {}).get("role")
    if role is None and obj.get("type") in AGENT_ROLES:
        role = obj.get("type")
    if role not in AGENT_ROLES:
        return "tool", []
    src = msg if msg is not None else obj
    segs = list(_content_segments(src.get("content")))
    if "text" in src and isinstance(src.get("text"), str):
        segs.append(("message", src["text"], None))
    if isinstance(src.get("command"), (str, list)):  # the documented minimal form {"role":"agent","command":...}
        cmd = src["command"]
        segs.append(("action", " ".join(map(str, cmd)) if isinstance(cmd, list) else cmd, None))
    for call in src.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call.get("function") if isinstance(call.get("function"), dict) else call
            segs.append(("action", "\n".join(_strings(fn.get("arguments", {}))), str(fn.get("name") or "")))
    return "agent", segs


_TEXT_AGENT = re.compile(r"^\s*\[agent\]\s?(.*)$")
_TEXT_TOOL = re.compile(r"^\s*\[tool\]")


def iter_segments(text: str, stream: str = "stdout", stats: dict | None = None) -> Iterator[Segment]:
    """The agent-authored segments of a transcript (see the module docstring for the convention)."""
    st = stats if stats is not None else {}
    for key in ("json_lines", "text_lines", "agent_lines", "skipped_lines"):
        st.setdefault(key, 0)
    in_tool_block = False
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        obj = None
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):  # the agent writes this text: never raise on it
                obj = None
        if isinstance(obj, dict):
            st["json_lines"] += 1
            who, segs = _json_segments(obj)
            if who == "agent" and segs:
                st["agent_lines"] += 1
                for kind, seg_text, tool in segs:
                    yield Segment(stream, no, kind, seg_text, tool)
            else:
                st["skipped_lines"] += 1
            continue
        st["text_lines"] += 1
        m = _TEXT_AGENT.match(raw)
        if m:
            in_tool_block = False
            body = m.group(1)
            st["agent_lines"] += 1
            if body.lstrip().startswith("$ "):
                yield Segment(stream, no, "action", body.lstrip()[2:])
            else:
                yield Segment(stream, no, "message", body)
            continue
        if _TEXT_TOOL.match(raw):
            in_tool_block = True
            st["skipped_lines"] += 1
            continue
        if not in_tool_block and raw.startswith("$ "):
            st["agent_lines"] += 1
            yield Segment(stream, no, "action", raw[2:])
            continue
        st["skipped_lines"] += 1


def scan_segment(seg: Segment) -> list[dict[str, Any]]:
    hits = []
    if seg.kind == "action" and seg.tool and WEB_TOOL.search(seg.tool):
        hits.append({"rule": "web_tool", "text": f"{seg.tool}: {seg.text}"[:MAX_TEXT]})
    body = re.sub(r"\\\r?\n", " ", seg.text)  # shell line continuations
    for line in body.splitlines():
        for name, rx in RULES:
            if rx.search(line):
                hits.append({"rule": name, "text": line.strip()[:MAX_TEXT]})
                break
    for h in hits:
        h.update(stream=seg.stream, line=seg.line, kind=seg.kind)
    return hits


def audit_texts(streams: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Audit (stream name, text) pairs; the record that goes into run.json under `audit`."""
    stats: dict[str, int] = {}
    matches: list[dict[str, Any]] = []
    mentions: list[dict[str, Any]] = []
    n_actions = n_messages = 0
    for stream, text in streams:
        for seg in iter_segments(text, stream, stats):
            if seg.kind == "action":
                n_actions += 1
            else:
                n_messages += 1
            for hit in scan_segment(seg):
                (matches if hit["kind"] == "action" else mentions).append(hit)
    verdict = "flagged" if matches else ("clean" if (n_actions or n_messages) else "unaudited")
    return {
        "verdict": verdict,
        "matches": matches[:MAX_MATCHES],
        "n_matches": len(matches),
        "mentions": mentions[:MAX_MATCHES],
        "agent_actions": n_actions,
        "agent_messages": n_messages,
        "json_lines": stats.get("json_lines", 0),
        "text_lines": stats.get("text_lines", 0),
        "skipped_lines": stats.get("skipped_lines", 0),
        "convention": TRANSCRIPT_CONVENTION,
    }


def audit_files(paths: dict[str, Path]) -> dict[str, Any]:
    """Audit log files given as {stream name: path} (missing files are skipped)."""
    streams = []
    for name, p in paths.items():
        try:
            streams.append((name, Path(p).read_bytes().decode("utf-8", errors="replace")))
        except OSError:
            continue
    return audit_texts(streams)


def turns_reported(text: str) -> int | None:
    """The last `{"turns": N}` (or `{"num_turns": N}`) JSON line of a transcript, else None."""
    found = None
    for raw in text.splitlines():
        line = raw.strip()
        if not (line.startswith("{") and ("turns" in line)):
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(obj, dict):
            continue
        for key in ("turns", "num_turns"):
            v = obj.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                found = v
                break
    return found
