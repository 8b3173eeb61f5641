"""What the live window tests share: their topics, users and publishes."""

from __future__ import annotations

from typing import Any

TOPICS = [{"name": "t", "key": ["/id"]}, {"name": "c", "key": ["/id"], "conflation": "always"}]
AUTH = {
    "user": [
        {"user_id": "all", "password": "pw", "read": ["*"], "write": ["*"]},
        {"user_id": "low", "password": "pw", "read": ["*"], "filter": {"t": "/lvl < 5", "c": "/lvl < 5"}},
    ]
}


def publish(record_id: int, topic: str = "t", /, **fields: Any) -> dict[str, Any]:
    return {"c": "publish", "t": topic, "data": {"id": record_id, **fields}}
