"""The ``flowdbg`` command line: the terminal debugger, recorded runs, graphs and adapters.

``flowdbg run app.py:graph -b NODE`` debugs a target in the terminal; ``flowdbg runs ...``
looks at recorded runs; ``flowdbg graph inspect``, ``flowdbg adapters`` and ``flowdbg demo``
complete it. Every read command takes ``--json``. Plugins add commands with the
``flowdbg_register_commands(cli)`` hook. See ``docs/cli.md``.
"""

from __future__ import annotations

from typing import Any

from flowdbg.cli._app import CliError, FlowdbgGroup, make_cli

__all__ = ["CliError", "FlowdbgGroup", "cli", "main", "make_cli"]

#: the ``flowdbg`` command group (plugin commands are added the first time it runs)
cli: FlowdbgGroup = make_cli()


def main(args: list[str] | None = None) -> Any:
    """Run the ``flowdbg`` command line (the console script's entry point).

    :param args: the arguments; default ``sys.argv[1:]``.
    """
    return cli.main(args=args, prog_name="flowdbg")
