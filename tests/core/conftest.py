from __future__ import annotations

import pytest

from .harness import Harness


@pytest.fixture
def hub() -> Harness:
    """An engine with the default topics (orders, trades) and a fake clock."""
    return Harness()
