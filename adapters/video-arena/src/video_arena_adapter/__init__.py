"""Video-Arena's Harbor adapter (Harbor's adapter layout): a thin entry point over
`video-arena make-harbor` (video_arena/harbor/generate.py), which owns task generation."""
