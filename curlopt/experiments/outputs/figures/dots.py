"""Scatter plots of many dots that do not keep their coordinates: they are made again whenever matplotlib reads them.

A figure of every epoch of every seed (the epochs figure, the report's exact
constraint values) draws millions of dots. ``Axes.scatter`` keeps each dot's
position as a masked (N, 2) array of floats, 18 bytes a dot, for as long as the
figure lives: at 2.5 million dots some 43 MiB on top of the numbers they were
made from, which the study holds anyway. :func:`scatter_dots` draws the same
scatter (``Axes.scatter`` itself: the same marker, colours, limits and layout)
and then keeps only a function that makes the positions again from the study's
arrays; matplotlib reads them through ``get_offsets`` when it draws the
collection and when it measures it, one collection at a time, and lets them go
afterwards. The positions it gets are the very array ``Axes.scatter`` made, so
the picture is the same, pixel for pixel.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.collections import PathCollection

__all__ = ["scatter_dots"]

#: ``() -> (x, y)``: the dots' coordinates, two 1-d float arrays of one length, made anew at every call
Points = Callable[[], tuple[np.ndarray, np.ndarray]]


def scatter_dots(ax: Axes, points: Points, **style: Any) -> PathCollection:
    """``ax.scatter(x, y, **style)`` for ``(x, y) = points()``, without keeping the dots' positions.

    ``points`` must give the same arrays at every call (it is called when the collection is drawn or measured).
    The collection returned is the one ``Axes.scatter`` made, its data limits taken into the axes as usual; only
    its stored positions are replaced by ``points``.
    """
    x, y = points()
    collection = ax.scatter(x, y, **style)
    del x, y
    # Axes.scatter builds a PathCollection and keeps the positions in it; the subclass differs only in where
    # get_offsets takes them from. Changing the class of the object Axes.scatter made (rather than building a
    # PathCollection here) keeps every choice scatter makes (marker path, sizes, colours, edge colours, alpha,
    # transforms, autoscaling) exactly as matplotlib makes it.
    dots_class = _dots_class()
    base = type(collection)
    collection.__class__ = dots_class
    collection.points = points  # type: ignore[attr-defined]
    # the stored (N, 2) array is let go; a one-dot placeholder keeps the collection "with offsets" for matplotlib's
    # own checks (get_datalim tests whether offsets were given); get_offsets never returns it
    base.set_offsets(collection, np.zeros((1, 2)))
    return collection


@functools.cache
def _dots_class() -> type:
    """The PathCollection subclass, made on first use so that importing this module does not import matplotlib."""
    from matplotlib.collections import PathCollection

    class DotsOnDemand(PathCollection):
        """A scatter's PathCollection whose positions are made by ``points`` each time they are read."""

        points: Points

        def get_offsets(self) -> np.ndarray:
            x, y = self.points()
            return np.ma.column_stack([x, y])  # what Axes.scatter stores: the coordinates stacked, masked

        def set_offsets(self, offsets: Any) -> None:
            raise TypeError("these dots' positions are made from the study's arrays; they cannot be set")

    return DotsOnDemand
