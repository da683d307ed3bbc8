"""A user's own utilities, as a package outside curlopt that model files name by import path (tests only)."""

from __future__ import annotations

from typing import Any

import numpy as np

from curlopt.utilities.library import Utility


class InverseSum(Utility):
    """``f(y) = −Σ_k w_k / y_k``: concave on y > 0 only (convex for y < 0), numpy derivatives, no form."""

    curvature = "concave"

    def __init__(self, weights: list[float], declare_domain: bool = True) -> None:
        super().__init__(len(weights))
        self.weights = np.asarray(weights, dtype=float)
        self.declare_domain = declare_domain

    def value(self, y: np.ndarray) -> float:
        y = np.asarray(y, dtype=float)
        return float(-np.sum(self.weights / y)) if np.all(y > 0) else -np.inf

    def gradient(self, y: np.ndarray) -> np.ndarray:
        return self.weights / np.asarray(y, dtype=float) ** 2

    def hessian(self, y: np.ndarray) -> np.ndarray:
        return np.diag(-2.0 * self.weights / np.asarray(y, dtype=float) ** 3)

    def domain_lower(self) -> np.ndarray:
        return np.zeros(self.dim) if self.declare_domain else np.full(self.dim, -np.inf)

    def to_spec(self) -> dict[str, Any]:
        return {"type": "user_utilities:InverseSum",
                "args": {"weights": self.weights.tolist(), "declare_domain": self.declare_domain}}

    def __repr__(self) -> str:
        return f"InverseSum(weights={self.weights.tolist()})"


def not_a_utility(**_: Any) -> int:
    return 3
