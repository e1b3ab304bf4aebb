"""``python -m tooluse``: the same command line as ``tooluse``."""

from tooluse.cli.app import main

main()
