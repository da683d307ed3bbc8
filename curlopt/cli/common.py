"""Helpers shared by the commands: environment parameters and model lookup."""

from __future__ import annotations

import ast
from typing import Any

from ..errors import CurloptError
from ..model import CMDP


def parse_params(items: list[str] | None) -> dict[str, Any]:
    """Parse ``key=value`` strings; values are Python literals (``8``, ``0.5``, ``None``, ``[0.2,0.4]``) or strings."""
    params: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise CurloptError(f"--param takes key=value (e.g. --param buffer=8), got {item!r}.")
        try:
            value = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            value = raw.strip()
        params[key] = value
    return params


def load_model(env: str, params: list[str] | None) -> CMDP:
    """The built-in model ``env`` with ``--param`` values, or a JSON model file when ``env`` ends in ``.json``."""
    if env.endswith(".json"):
        from ..modelfile import load_model as load_file

        if params:
            raise CurloptError("--param applies to built-in models, not to a model file.")
        return load_file(env)
    from ..models import build_model

    return build_model(env, **parse_params(params))
