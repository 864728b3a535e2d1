"""`python -m rlhelper.cli`: the `rlhelper` command without its console script."""

from . import main

main()
