"""`python -m refusals` runs the command line."""

from refusals.cli import main

main()
