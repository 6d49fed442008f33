"""`python -m sitemapcrawl` runs the command line."""

from sitemapcrawl.cli.app import main

main()
