"""Render a game's single instruction file for one protocol (docs/PROTOCOLS.md, "One
instruction, two deliveries").

Shared lines are kept byte for byte.  Delivery text is marked:

    <!-- B-ONLY:START -->   whole lines, agentic only   <!-- B-ONLY:END -->
    <!-- A-ONLY:START -->   whole lines, video only     <!-- A-ONLY:END -->
    <!--B-->inline span<!--/B-->      <!--A-->inline span<!--/A-->

Rendering fails closed: an unbalanced, nested, unknown or line-spanning marker, or any HTML comment
left over, raises `InstructionMarkerError` with the line number.  Sending the other protocol's
delivery text (or a raw comment) to a model is worse than not sending anything.
"""
from __future__ import annotations

import re
from os import PathLike
from pathlib import Path

from video_arena.digests import sha256_text

PROTOCOL_ALIASES = {"video": "A", "a": "A", "agentic": "B", "b": "B"}

_BLOCK = re.compile(r"^\s*<!--\s*([AB])-ONLY:(START|END)\s*-->\s*$")
_INLINE_OPEN = re.compile(r"<!--([AB])-->")
_INLINE_CLOSE = re.compile(r"<!--/([AB])-->")
_INLINE_SPAN = re.compile(r"<!--([AB])-->(.*?)<!--/\1-->", re.S)


class InstructionMarkerError(ValueError):
    """The instruction file is malformed: a delivery marker would survive rendering."""


def protocol_letter(protocol: str) -> str:
    """'video'/'A' -> 'A', 'agentic'/'B' -> 'B'; anything else is an error."""
    key = str(protocol).strip().lower()
    if key not in PROTOCOL_ALIASES:
        raise ValueError(f"unknown protocol {protocol!r}: use 'video' (or 'A') or 'agentic' (or 'B')")
    return PROTOCOL_ALIASES[key]


def render_instruction(text: str, protocol: str, source: str = "<instruction>") -> str:
    """Render instruction text for a protocol; see the module docstring."""
    keep = protocol_letter(protocol)
    out: list[str] = []
    block: tuple[str, int] | None = None  # (letter, line number of START)
    for lineno, line in enumerate(text.splitlines(keepends=True), start=1):
        m = _BLOCK.match(line.rstrip("\r\n"))
        if m:
            letter, edge = m.groups()
            if edge == "START":
                if block is not None:
                    raise InstructionMarkerError(
                        f"{source}:{lineno}: {letter}-ONLY:START nested inside the "
                        f"{block[0]}-ONLY block opened on line {block[1]}")
                block = (letter, lineno)
            else:
                if block is None:
                    raise InstructionMarkerError(f"{source}:{lineno}: {letter}-ONLY:END without a START")
                if block[0] != letter:
                    raise InstructionMarkerError(
                        f"{source}:{lineno}: {letter}-ONLY:END closes the {block[0]}-ONLY block "
                        f"opened on line {block[1]}")
                block = None
            continue
        if block is not None and block[0] != keep:
            continue  # the other protocol's whole lines
        out.append(_render_inline(line, keep, source, lineno))
    if block is not None:
        raise InstructionMarkerError(f"{source}:{block[1]}: {block[0]}-ONLY:START is never closed")
    return "".join(out)


def _render_inline(line: str, keep: str, source: str, lineno: int) -> str:
    opens = [m.group(1) for m in _INLINE_OPEN.finditer(line)]
    closes = [m.group(1) for m in _INLINE_CLOSE.finditer(line)]
    if opens or closes:
        # Spans must pair up on this line, in order, without nesting.
        stack: list[str] = []
        for m in re.finditer(r"<!--(/?)([AB])-->", line):
            closing, letter = m.group(1) == "/", m.group(2)
            if not closing:
                if stack:
                    raise InstructionMarkerError(
                        f"{source}:{lineno}: inline <!--{letter}--> nested inside <!--{stack[-1]}-->")
                stack.append(letter)
            else:
                if not stack:
                    raise InstructionMarkerError(f"{source}:{lineno}: <!--/{letter}--> without an opening marker")
                if stack[-1] != letter:
                    raise InstructionMarkerError(
                        f"{source}:{lineno}: <!--/{letter}--> closes <!--{stack[-1]}-->")
                stack.pop()
        if stack:
            raise InstructionMarkerError(
                f"{source}:{lineno}: inline <!--{stack[-1]}--> is not closed on the same line "
                "(inline spans may not span lines)")
        line = _INLINE_SPAN.sub(lambda m: m.group(2) if m.group(1) == keep else "", line)
    if "<!--" in line or "-->" in line:
        raise InstructionMarkerError(
            f"{source}:{lineno}: a comment or unknown marker would reach the model: {line.strip()[:120]!r}")
    return line


def instruction_for(protocol: str, path: str | PathLike) -> str:
    """The instruction file at `path`, rendered for `protocol` ('video'/'A' or 'agentic'/'B')."""
    p = Path(path)
    text = p.read_bytes().decode("utf-8-sig")  # an editor's byte-order mark is not instruction text
    return render_instruction(text, protocol, source=str(p))


def text_digest(text: str) -> str:
    """SHA-256 of the UTF-8 bytes of a delivered text: the run records' instruction digest."""
    return sha256_text(text)
