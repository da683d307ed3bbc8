"""Backends: one module per solver family, behind one registry.

Importing this package imports no solver; each backend imports its solver when
it compiles a program.
"""

from .base import Backend, CompiledProgram, RawSolution
from .registry import (
    auto_backend,
    auto_candidates,
    backend_names,
    backends_accepting,
    choose_backend,
    get_backend,
    installed_backends,
    register_backend,
    resolve_backend,
)

__all__ = [
    "Backend",
    "CompiledProgram",
    "RawSolution",
    "auto_backend",
    "auto_candidates",
    "backend_names",
    "backends_accepting",
    "choose_backend",
    "resolve_backend",
    "get_backend",
    "installed_backends",
    "register_backend",
]
