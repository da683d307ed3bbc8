"""Buffered streams of uniform random numbers.

The fast stepping path draws uniforms in blocks but may stop mid-block when an
epoch ends; the rest stays buffered for the next epoch. Since numpy's
``Generator.random(n)`` yields the same numbers as ``n`` single draws, a stream
gives the same sequence however it is consumed — which is what makes the fast
and generic paths produce identical trajectories.
"""

from __future__ import annotations

import numpy as np

__all__ = ["UniformStream"]


class UniformStream:
    """Uniforms in [0, 1) from ``generator``, read with ``peek`` and consumed with ``advance``."""

    def __init__(self, generator: np.random.Generator, block: int = 8192):
        self.generator = generator
        self.block = block
        self._buffer = np.zeros(0)
        self._position = 0

    def peek(self, count: int) -> np.ndarray:
        """The next ``count`` uniforms, without consuming them."""
        available = self._buffer.size - self._position
        if available < count:
            fresh = self.generator.random(max(self.block, count - available))
            self._buffer = np.concatenate([self._buffer[self._position:], fresh])
            self._position = 0
        return self._buffer[self._position:self._position + count]

    def advance(self, count: int) -> None:
        """Consume ``count`` uniforms previously seen with ``peek``."""
        self._position += count

    def take(self) -> float:
        """Consume and return one uniform."""
        value = float(self.peek(1)[0])
        self._position += 1
        return value
