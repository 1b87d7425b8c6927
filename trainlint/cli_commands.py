"""The commands besides ``check`` (``fix``, ``rules``, ``gpus``, ``rule``): defined when one of
them runs or ``--help`` lists them (``cli._LazyGroup``), so that building their options (about
30 click parameters) is no part of ``trainlint check``'s start-up."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from trainlint.cli import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_OK,
    _color,
    _fail,
    _light_pydantic,
    _paths_or_stdin,
    _preflight,
    _settings,
    _write_guarded,
    selection_options,
)


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@selection_options
@click.option("--apply", "apply_", is_flag=True, help="Write the fixes (default: print the diff only).")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that change training numerics or behaviour.")
@click.option("--diff", is_flag=True, help="Print the unified diff (the default without --apply).")
@click.option("--stdin-filename", help="With `-` as the path: the file name the text on stdin stands for; "
              "the fixed text is printed to stdout (the diff with --diff).")
@click.option("--no-cache", is_flag=True, help="Accepted like `check --no-cache`; fix always reads the files afresh.")
def fix(paths: tuple[Path, ...], apply_: bool, unsafe_fixes: bool, diff: bool, stdin_filename: str | None,
        no_cache: bool, **kw) -> None:
    """Fix what can be fixed. Prints the diff; --apply writes it."""
    _light_pydantic()
    import difflib
    import os

    from trainlint.config import ConfigError
    from trainlint.engine import fix_outcome, nothing_checked
    from trainlint.fixing.apply import write_fixed

    path_list, overlay, stdin_name = _paths_or_stdin(paths, stdin_filename, apply_)
    try:
        settings = _settings(path_list, **kw)
        _preflight(settings, path_list, bool(kw.get("base")))
        outcome = fix_outcome(path_list, settings, unsafe=unsafe_fixes, overlay=overlay)
    except ConfigError as e:
        _fail(str(e))
        return

    def show() -> None:
        if stdin_name is not None and not diff:
            sys.stdout.write(outcome.fixed.get(stdin_name, overlay[stdin_name]))
            return
        if diff or not apply_:
            for path in sorted(outcome.fixed):
                if path.endswith(".ipynb"):  # the cells' sources, not the escaped JSON
                    from trainlint.fixing.notebook import cell_diff

                    sys.stdout.writelines(cell_diff(path, outcome.original[path], outcome.fixed[path]))
                    continue
                old = outcome.original[path].splitlines(keepends=True)
                new = outcome.fixed[path].splitlines(keepends=True)
                sys.stdout.writelines(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}"))

    _write_guarded(show)
    not_written: set[str] = set()
    if apply_:
        from trainlint.fixing.apply import remove_stale_temps

        # what a killed earlier run left next to the files it was writing
        remove_stale_temps(sorted({os.path.dirname(os.path.realpath(p)) for p in outcome.original}))
        for path, text in sorted(outcome.fixed.items()):
            problem = write_fixed(path, outcome.original[path], text)
            if problem is not None:
                not_written.add(path)
                click.echo(f"trainlint: not written: {path}: {problem}", err=True)
    for d, error in outcome.reverted:
        at = f"{d.path}:cell {d.cell}:{d.line}" if d.cell is not None else f"{d.path}:{d.line}"
        click.echo(f"trainlint: fix for {d.code} at {at} was not applied: the result did not parse "
                   f"({error})", err=True)
    for d, away in outcome.outside:
        real = os.path.realpath(away)
        where = away if real == os.path.abspath(away) else f"{away} (resolved: {real})"
        click.echo(f"trainlint: fix for {d.code} at {d.path}:{d.line} was not applied: it edits {where}, which is "
                   f"outside the paths given to fix; pass that path too to fix it", err=True)
    remaining = outcome.remaining
    # what stops a file from being fixed at all (missing, unreadable, unparsable): say it
    for d in remaining:
        if d.code in ("TL000", "TL001", "TL002", "TL003"):
            click.echo(f"{d.path}:{d.line}:{d.column}: {d.code} [{d.name}] {d.message}", err=True)

    # count only what was (or would be) written
    written = {p for p in outcome.fixed if p not in not_written}
    n = sum(1 for d in outcome.applied if d.fix is not None and all(e.path in written for e in d.fix.edits))
    verb = "Fixed" if apply_ else "Would fix"
    hidden = sum(1 for d in remaining if d.fix is not None and d.fix.applicability == "unsafe")
    msg = f"{verb} {n} finding{'s' if n != 1 else ''} in {len(written)} file{'s' if len(written) != 1 else ''}"
    msg += f" ({len(remaining)} remaining"
    if hidden and not unsafe_fixes:
        msg += f"; {hidden} fixable with --unsafe-fixes"
    msg += ")."
    empty = None if overlay or outcome.first is None else nothing_checked(path_list, outcome.first, settings)
    # an empty run says why, as `check` does, rather than "Fixed 0 findings in 0 files"
    click.echo(f"trainlint: {empty}." if empty is not None else msg, err=True)
    if any(d.code == "TL000" for d in remaining):
        sys.exit(EXIT_ERROR)
    if apply_:
        sys.exit(EXIT_FINDINGS if remaining or not_written else EXIT_OK)
    sys.exit(EXIT_FINDINGS if outcome.fixed or remaining else EXIT_OK)


@click.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "table", "json"]), default="text",
              help="text: a table on a wide terminal, else one line per rule; table: always the table; json.")
def rules_cmd(fmt: str) -> None:
    """List every rule: code, fix mark, name, severity, summary."""
    import shutil

    from trainlint.report import listings

    rows = listings.rule_rows()
    if fmt == "json":
        click.echo(listings.rules_json(rows))
    elif fmt == "text" and not (sys.stdout.isatty() and shutil.get_terminal_size((80, 24)).columns >= 120):
        click.echo(listings.rules_lines(rows))  # piped or narrow: one plain line per rule
    else:
        listings.print_rules_table(rows, _color())


@click.command("gpus")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def gpus_cmd(fmt: str) -> None:
    """List the GPUs trainlint knows (for --gpu): memory, compute capability, number formats."""
    from trainlint.report import listings

    click.echo(listings.gpus_json() if fmt == "json" else listings.gpus_lines())
    if fmt != "json":
        click.echo("A family name without memory size (A100, H100, V100) means the larger variant.", err=True)


@click.command("rule")
@click.argument("code_or_name")
def rule_cmd(code_or_name: str) -> None:
    """Show one rule's documentation (by code or name)."""
    from trainlint.rules import get_rule
    from trainlint.rules.docs import render_markdown

    rule = get_rule(code_or_name)
    if rule is None:
        from trainlint.rule_index import unknown_selector

        _fail((unknown_selector(code_or_name) or f"no rule {code_or_name!r}").replace(
            "unknown rule code, prefix or name", "no rule"))
        return
    click.echo(render_markdown(rule))
