"""One run simulated, and the one public door to it: the agent–environment loop and its fast tabular path
(:mod:`.loop`), the random streams it draws from (:mod:`.streams`), and the trace it writes (:mod:`.trace`)."""

from .loop import ChainSimulator, checkpoint_times, run
from .streams import UniformStream
from .trace import READABLE_VERSIONS, TRACE_FORMAT, TRACE_VERSION, EpochRecord, Trace, load_trace

__all__ = ["run", "checkpoint_times", "ChainSimulator", "UniformStream", "Trace", "EpochRecord", "load_trace",
           "TRACE_FORMAT", "TRACE_VERSION", "READABLE_VERSIONS"]
