"""The Python client: a publisher (sequence numbers, a publish store, re-sending after reconnects)
and a subscriber (views, viewports and aggregated views followed live, resubscribed after
reconnects)."""

from .publisher import Publisher, PublishError
from .store import FilePublishStore, MemoryPublishStore, PublishStore
from .subscriber import Change, Subscriber, SubscriptionError, UnconfiguredTopicWarning, View

__all__ = [
    "Change",
    "FilePublishStore",
    "MemoryPublishStore",
    "PublishError",
    "PublishStore",
    "Publisher",
    "Subscriber",
    "SubscriptionError",
    "UnconfiguredTopicWarning",
    "View",
]
