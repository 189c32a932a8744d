"""One module per ``fleet`` verb (``fleet/cli.py`` wires them into the typer app) and the options they share."""
