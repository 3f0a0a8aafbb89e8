"""``python -m tokenscale`` runs the CLI."""

from tokenscale.cli.app import main

main()
