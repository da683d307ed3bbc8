"""The Hypothesis strategies now ship with curlopt: see :mod:`curlopt.testing.strategies`.

Kept so that ``from strategies import ...`` in the tests keeps working.
"""

from curlopt.testing.strategies import *  # noqa: F401,F403
from curlopt.testing.strategies import __all__  # noqa: F401
