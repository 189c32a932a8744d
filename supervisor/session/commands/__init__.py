"""The ``session`` subcommands, one module each: ``run(**arguments) -> exit status``.

``session.cli`` imports only the module of the command it runs; no module here imports the cli.
"""
