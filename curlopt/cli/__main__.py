"""``python -m curlopt.cli``: the same as the ``curlopt`` script."""

from . import main

main()
