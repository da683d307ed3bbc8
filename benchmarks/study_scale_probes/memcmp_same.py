# As run for benchmarks/results-study-scale-2026-11-27.txt (sections 6-7); kept verbatim as the record of the measurement.
import dataclasses
import pickle
import sys

import numpy as np

a = pickle.load(open(sys.argv[1], "rb")); b = pickle.load(open(sys.argv[2], "rb"))
assert a.keys() == b.keys()
bad = 0
for k in a:
    for f in dataclasses.fields(a[k]):
        x, y = getattr(a[k], f.name), getattr(b[k], f.name)
        if isinstance(x, np.ndarray):
            ok = x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind == "f") and (x.dtype == y.dtype or f.name == "epoch_start")
        elif isinstance(x, dict) and x and isinstance(next(iter(x.values())), np.ndarray):
            ok = x.keys() == y.keys() and all(np.array_equal(x[i], y[i], equal_nan=True) and x[i].dtype == y[i].dtype and x[i].flags.c_contiguous == y[i].flags.c_contiguous for i in x)
        else:
            ok = repr(x) == repr(y)
        if not ok:
            bad += 1; print("differs:", k, f.name)
print("configurations", len(a), "differences", bad)
