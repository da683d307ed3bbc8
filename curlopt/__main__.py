"""``python -m curlopt``: the same as the ``curlopt`` script."""

from .cli import main

main()
