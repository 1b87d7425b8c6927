"""The ``trainlint server`` command (loaded only when it runs)."""

from __future__ import annotations

import sys

import click


@click.command("server")
@click.option("--stdio", is_flag=True, help="Talk LSP over stdin/stdout (the default and only transport).")
def server(stdio: bool) -> None:
    """Run the language server (LSP over stdio) for editors: diagnostics, quick fixes, rule docs."""
    try:
        from trainlint.server.protocol import serve
    except ImportError as exc:
        click.echo(f"trainlint: the language server needs pygls and lsprotocol ({exc.name} is not installed); "
                   'install them with: pip install "trainlint[server]"', err=True)
        sys.exit(2)
    serve()
