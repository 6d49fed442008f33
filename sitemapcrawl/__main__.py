"""`python -m sitemapcrawl` runs the command line."""

from sitemapcrawl.cli import main

main()
