"""``python -m hindsight.cli``: the same as the ``hindsight`` script."""

from hindsight.cli import main

main()
