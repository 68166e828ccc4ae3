"""The container host: what runs the sandboxes, beside the Harbor adapter (video_arena/harbor/).

The Debian base image made with debootstrap and the sandbox image (image.py, `video-arena image`:
image_cli.py), the local Docker daemon and compose plugin (docker_host.py), Podman (podman.py), image
references and a local registry (registry.py), the shared command runner (subproc.py) and the network
probe run inside a trial (netprobe.py).  Nothing here generates, validates or scores a dataset.
"""
