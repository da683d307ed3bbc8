"""Running agents: the learning loop, traces and metrics (and later sweeps and figures)."""

from .loop import checkpoint_times, run
from .trace import EpochRecord, Trace, load_trace

__all__ = ["run", "checkpoint_times", "Trace", "EpochRecord", "load_trace"]
