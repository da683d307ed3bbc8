"""One run simulated: the agent–environment loop and its fast tabular path (:mod:`.loop`), the random streams it
draws from (:mod:`.streams`), and the trace it writes (:mod:`.trace`)."""
