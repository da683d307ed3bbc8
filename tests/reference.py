"""The independent reference solvers now ship with curlopt: see :mod:`curlopt.testing.reference`.

Kept so that ``from reference import ...`` in the tests keeps working.
"""

from curlopt.testing.reference import *  # noqa: F401,F403
from curlopt.testing.reference import __all__  # noqa: F401
