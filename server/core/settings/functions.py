"""The user's own functions a topic names as ``module:function`` (``conflation_merge``,
``conflation_match``): checked once when the configuration is read, loaded when the engine
builds the topic."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError

Function = Callable[[Any, Any], Any]


def check_function(spec: str, where: str) -> None:
    """Refuse a ``module:function`` that is malformed, cannot be imported or is not callable."""
    module_name, _, function_name = spec.partition(":")
    if not module_name or not function_name:
        raise ConfigError(f"{where}: expected 'module:function', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise ConfigError(f"{where}: cannot import {module_name}: {error}") from None
    if not callable(getattr(module, function_name, None)):
        raise ConfigError(f"{where}: {module_name} has no function {function_name}")


def load_function(spec: str | None) -> Function | None:
    """The function ``spec`` names (``check_function`` passed it), or None."""
    if spec is None:
        return None
    module_name, _, function_name = spec.partition(":")
    function: Function = getattr(importlib.import_module(module_name), function_name)
    return function
