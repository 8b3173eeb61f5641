"""A Python client for publishers: sequence numbers, a publish store, re-sending after reconnects."""

from .publisher import Publisher, PublishError
from .store import FilePublishStore, MemoryPublishStore, PublishStore

__all__ = ["FilePublishStore", "MemoryPublishStore", "PublishError", "PublishStore", "Publisher"]
