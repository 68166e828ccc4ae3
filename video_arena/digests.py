"""SHA-256 digests: the one place the project hashes bytes and files (manifests, answer states,
request hashes, dataset checks, instruction digests, cache keys, seeds derived from names).

Outside it only code that cannot import the package hashes on its own: the stdlib judge and the files
copied into Harbor tasks (judge/, harbor_templates/) and the engine-side scripts that run in another
interpreter."""
from __future__ import annotations

import hashlib
import os

_BUFSIZE = 1 << 20


def sha256_hasher(data: bytes = b""):
    """A running SHA-256 (update() it, then hexdigest() or digest()): for digests built from many parts."""
    return hashlib.sha256(data)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """SHA-256 of the text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def derived_int(text: str, nbytes: int = 4) -> int:
    """An integer from the first `nbytes` bytes (big-endian) of the SHA-256 of the text's UTF-8 bytes:
    a seed derived from a name, the same on every machine and Python (unlike hash())."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:nbytes], "big")


def sha256_file(path: str | os.PathLike, bufsize: int = _BUFSIZE) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(bufsize), b""):
            h.update(chunk)
    return h.hexdigest()


def copy_sha256(src: str | os.PathLike, dst: str | os.PathLike, bufsize: int = _BUFSIZE) -> str:
    """Copy the bytes of src to dst (created or truncated) and return their SHA-256, in one read."""
    h = hashlib.sha256()
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        for chunk in iter(lambda: fin.read(bufsize), b""):
            h.update(chunk)
            fout.write(chunk)
    return h.hexdigest()
