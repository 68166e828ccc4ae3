"""Push the sandbox image to a registry and pin datasets to the pushed digest (cluster use).

    video-arena image push REGISTRY/NAME[:TAG] [--image video-arena/base:latest]

tags the local image (by its image ID, read once, so a concurrent re-tag of the source cannot change
what is pushed), runs `docker push`, and prints one line on stdout: the repo digest
`REGISTRY/NAME@sha256:<64 hex>` that `make-harbor --base-image` pins every task to. Docker's own
record of the push (`docker image inspect` .RepoDigests) must hold the digest the push reported, and
the pushed tag must still name the image ID read at the start; otherwise nothing is printed on stdout.

Image references follow Docker's grammar (distribution/reference): `[DOMAIN/]PATH[:TAG][@DIGEST]`,
where DOMAIN is the first component when it holds a `.` or a `:` or is `localhost`. A pinned
reference is `DOMAIN/PATH@sha256:<64 lowercase hex>`: no tag (Docker ignores a tag beside a digest,
so it could only mislead a reader).
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from video_arena.container_host import docker_host
from video_arena.container_host.subproc import last_line as _last_line
from video_arena.container_host.subproc import run as _run

DEFAULT_TAG = "latest"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_RE = re.compile(rf"{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]+)?")
_PATH_COMPONENT_RE = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_TAG_RE = re.compile(r"[\w][\w.-]{0,127}")
SHA256_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")
_PUSHED_DIGEST_RE = re.compile(r"^(\S+): digest: (sha256:[0-9a-f]{64}) size: \d+\s*$", re.M)
NAME_MAX = 255


class ImageReferenceError(ValueError):
    """Not a usable image reference (the message says why, in one line)."""


class PushError(RuntimeError):
    """The push did not happen or cannot be trusted (the message says why, in one line)."""


@dataclass(frozen=True)
class ImageRef:
    domain: str | None
    path: str
    tag: str | None = None
    digest: str | None = None

    @property
    def repository(self) -> str:
        return f"{self.domain}/{self.path}" if self.domain else self.path

    @property
    def pinned(self) -> bool:
        return self.digest is not None

    def __str__(self) -> str:
        return (self.repository + (f":{self.tag}" if self.tag else "")
                + (f"@{self.digest}" if self.digest else ""))


def parse_reference(text: str) -> ImageRef:
    """Parse a Docker image reference; ImageReferenceError with a one-line reason when it is not one."""
    if not isinstance(text, str) or not text:
        raise ImageReferenceError("the image reference is empty")
    if text != text.strip() or any(c.isspace() for c in text):
        raise ImageReferenceError(f"{text!r} is not an image reference (it holds white space)")
    rest, digest = text, None
    if "@" in rest:
        rest, digest = rest.split("@", 1)
        if not SHA256_DIGEST_RE.fullmatch(digest):
            raise ImageReferenceError(f"{text!r}: the digest {digest!r} is not sha256: followed by 64 lowercase "
                                  "hex digits")
    tag = None
    last = rest.rsplit("/", 1)[-1]
    if ":" in last:
        rest, tag = rest.rsplit(":", 1)
        if not _TAG_RE.fullmatch(tag):
            raise ImageReferenceError(f"{text!r}: {tag!r} is not a valid tag")
    parts = rest.split("/")
    domain = None
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        domain = parts.pop(0)
        if not _DOMAIN_RE.fullmatch(domain):
            raise ImageReferenceError(f"{text!r}: {domain!r} is not a registry host[:port]")
    for p in parts:
        if not _PATH_COMPONENT_RE.fullmatch(p):
            raise ImageReferenceError(f"{text!r}: the name part {p!r} is not valid (lowercase letters, digits "
                                  "and single . _ - separators)")
    ref = ImageRef(domain, "/".join(parts), tag, digest)
    if len(ref.repository) > NAME_MAX:
        raise ImageReferenceError(f"{text!r}: the repository name is longer than {NAME_MAX} characters")
    return ref


def parse_pinned(text: str) -> ImageRef:
    """A reference that names exactly one image: `[REGISTRY/]NAME@sha256:<64 hex>` and no tag."""
    ref = parse_reference(text)
    if not ref.pinned:
        raise ImageReferenceError(f"{text!r} is not pinned: use NAME@sha256:<64 hex> (the digest "
                              "`video-arena image push` prints), not a tag")
    if ref.tag is not None:
        raise ImageReferenceError(f"{text!r} carries both a tag and a digest: drop the tag ({ref.tag!r}); Docker "
                              "ignores it and it would mislead a reader")
    return ref


def check_base_image(text: str) -> str | None:
    """None when `text` can be a dataset's base image; else the one-line reason. A reference with `@`
    must be a well-formed pin (see parse_pinned); one without is accepted as a (mutable) tag."""
    try:
        parse_pinned(text) if "@" in text else parse_reference(text)
    except ImageReferenceError as exc:
        return str(exc)
    return None


def is_pinned(text: str) -> bool:
    try:
        parse_pinned(text)
    except ImageReferenceError:
        return False
    return True


# --- docker push ---------------------------------------------------------------------------------

@dataclass
class PushResult:
    source: str
    image_id: str
    pushed_tag: str
    pinned: str
    seconds: float


def _docker(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    cli = docker_host.docker_cli()
    if not cli:
        raise PushError("the docker CLI is not on PATH (install docker.io: run scripts/setup.sh)")
    return _run([cli, *args], timeout=timeout)


def target_reference(text: str) -> ImageRef:
    """The push target REGISTRY/NAME[:TAG]: a registry host is required, a digest is refused."""
    ref = parse_reference(text)
    if ref.digest:
        raise ImageReferenceError(f"{text!r}: push to a tag (REGISTRY/NAME[:TAG]); the digest is what the push "
                              "prints, it cannot be chosen")
    if not ref.domain:
        raise ImageReferenceError(f"{text!r} names no registry: use REGISTRY/NAME[:TAG], e.g. "
                              "registry.example.org:5000/video-arena/base:v1 (a bare name would go to "
                              "Docker Hub)")
    return ImageRef(ref.domain, ref.path, ref.tag or DEFAULT_TAG)


def classify_push_failure(registry: str, output: str) -> str:
    """One line saying why `docker push` failed, from its output."""
    low = output.lower()
    last = _last_line(output) or "docker push failed"
    if any(s in low for s in ("connection refused", "no such host", "i/o timeout", "no route to host",
                              "network is unreachable", "connection reset", "tls handshake timeout",
                              "context deadline exceeded")):
        return f"registry {registry} is unreachable: {last}"
    if "server gave http response to https client" in low:
        return (f"registry {registry} speaks plain HTTP: add it to the daemon's insecure-registries "
                f"(loopback registries are allowed by default), or serve it over TLS: {last}")
    if "x509" in low or "certificate" in low:
        return f"registry {registry}'s TLS certificate is not trusted by the Docker daemon: {last}"
    if any(s in low for s in ("unauthorized", "authentication required", "denied", "forbidden")):
        return f"registry {registry} refused the push (log in with `docker login {registry}`?): {last}"
    return f"registry {registry} refused the push: {last}"


def _familiar(name: str) -> str:
    """Docker's short form of a name: docker.io/library/x -> x, docker.io/u/x -> u/x (RepoDigests use it)."""
    for prefix in ("docker.io/library/", "docker.io/", "index.docker.io/library/", "index.docker.io/"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def local_image_id(image: str) -> str:
    res = _docker(["image", "inspect", "--format", "{{.Id}}", image], timeout=30)
    if res.returncode != 0:
        err = (res.stderr + res.stdout).lower()
        if "no such image" in err or "no such object" in err:
            raise PushError(f"image {image} is not present locally: build it with `video-arena image build` "
                            "(or name another with --image)")
        raise PushError(f"cannot ask Docker about image {image}: {_last_line(res.stderr) or 'inspect failed'}")
    image_id = res.stdout.strip()
    if not SHA256_DIGEST_RE.fullmatch(image_id):
        raise PushError(f"Docker reports an unexpected image ID {image_id!r} for {image}")
    return image_id


def repo_digests(image: str) -> list[str]:
    res = _docker(["image", "inspect", "--format", "{{range .RepoDigests}}{{println .}}{{end}}", image], timeout=30)
    if res.returncode != 0:
        raise PushError(f"cannot read the repo digests of {image}: {_last_line(res.stderr)}")
    return [line.strip() for line in res.stdout.splitlines() if line.strip()]


def push_image(target: str, image: str = "video-arena/base:latest", echo=None,
               timeout: float = 3600) -> PushResult:
    """Tag `image` (by ID) as `target`, push it, and return the pinned reference REGISTRY/NAME@sha256:..."""
    echo = echo or (lambda _m: None)
    t0 = time.monotonic()
    try:
        ref = target_reference(target)
    except ImageReferenceError as exc:
        raise PushError(f"bad reference: {exc}") from exc
    ok, why = docker_host.ensure_docker(start=False, install_compose=False)
    if not ok:
        raise PushError(f"Docker is not usable: {why}")
    image_id = local_image_id(image)
    tagged = str(ref)
    res = _docker(["tag", image_id, tagged], timeout=30)
    if res.returncode != 0:
        raise PushError(f"docker tag {image_id[:19]} {tagged} failed: {_last_line(res.stderr)}")
    echo(f"push: {image} (image {image_id[:19]}) as {tagged}")
    lines: list[str] = []
    try:
        proc = subprocess.Popen([docker_host.docker_cli() or "docker", "push", tagged], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                                start_new_session=True)
    except OSError as exc:
        raise PushError(f"cannot run docker push: {exc}") from exc
    def kill() -> None:  # the whole process group: a child holding the pipe open cannot hang us
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)  # a registry that stops answering cannot hang us
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.strip() and ("Pushed" in line or "digest:" in line or "exists" in line):
                echo(f"push: {line.strip()}")
        rc = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:  # interrupted (Ctrl-C): no push left running behind us
            kill()
            proc.wait()
    if rc < 0:
        raise PushError(f"docker push of {tagged} did not finish in {timeout:.0f} s (killed)")
    output = "\n".join(lines)
    if rc != 0:
        raise PushError(classify_push_failure(ref.domain or "", output))
    found = [(t, d) for t, d in _PUSHED_DIGEST_RE.findall(output) if t == ref.tag]
    if len(found) != 1:
        raise PushError(f"docker push of {tagged} exited 0 but reported no digest for tag {ref.tag!r} "
                        f"(last line: {_last_line(output)!r})")
    digest = found[0][1]
    # The tag must still name the image we read at the start (a concurrent re-tag would not).
    if local_image_id(tagged) != image_id:
        raise PushError(f"{tagged} was re-tagged to another image while it was pushed; push again")
    pinned = f"{ref.repository}@{digest}"
    repo = _familiar(ref.repository)
    if not any(d.rsplit("@", 1) == [repo, digest] for d in map(_familiar, repo_digests(image_id))):
        raise PushError(f"docker push reported {digest} but Docker's record of image {image_id[:19]} "
                        f"does not hold it for {ref.repository}")
    return PushResult(image, image_id, tagged, pinned, time.monotonic() - t0)


def push_main(args) -> int:
    """`video-arena image push` (argparse namespace from image._parser(), dispatched by image_cli.main)."""
    def echo(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    try:
        res = push_image(args.reference, image=args.image, echo=echo)
    except PushError as exc:
        print(f"video-arena image push: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("video-arena image push: error: interrupted; nothing was printed as pushed", file=sys.stderr)
        return 130
    echo(f"push: {res.pushed_tag} = {res.pinned} (image {res.image_id[:19]}) in {res.seconds:.0f} s")
    echo(f"next: video-arena make-harbor --out DIR --base-image {res.pinned}")
    print(res.pinned, flush=True)
    return 0
