"""Harbor's registry.json, as publish writes and reads it back: the dataset model Harbor validates a
registry entry with, and the client `harbor run --registry-path` reads one with.
"""
from __future__ import annotations

from harbor.models.registry import DatasetSpec
from harbor.registry.client.json import JsonRegistryClient

__all__ = ["DatasetSpec", "JsonRegistryClient"]
