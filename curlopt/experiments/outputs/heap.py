"""Hand the C heap's free memory back to the system between the steps of a study's outputs."""

from __future__ import annotations

from typing import Any

__all__ = ["give_back_memory"]


def give_back_memory() -> None:
    """Hand the C heap's free memory back to the system (glibc's ``malloc_trim``; nothing elsewhere).

    Freed Python objects and small arrays leave free space in the heap that the allocator keeps for later: after
    a figure of many artists, or a study's records folded into arrays, tens of megabytes stay counted in the
    process's resident memory though nothing uses them, and the next step's peak comes on top. Trimming changes
    no value anywhere; it only lowers the process's resident size.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None where there is none (macOS, Windows, musl)."""
    global _TRIM
    if _TRIM is False:
        import ctypes
        import ctypes.util

        _TRIM = None
        name = ctypes.util.find_library("c")
        if name:
            try:
                _TRIM = ctypes.CDLL(name).malloc_trim
            except (OSError, AttributeError):
                _TRIM = None
    return _TRIM


_TRIM: Any = False  # not looked up yet
