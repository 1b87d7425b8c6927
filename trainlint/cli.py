"""The command line: a thin click layer over the engine.

Only what a command needs is imported inside it, so ``trainlint check`` stays light (no torch,
transformers, accelerate or deepspeed, ever).
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

# Start-up creates tens of thousands of long-lived objects (modules, functions, the rules, the
# knowledge tables): with the default thresholds the cyclic collector runs some twenty times
# during a one-file check, about 5 % of it, and frees nothing. It runs rarely from here on, as
# during a run (``engine``); ``entry`` gives the long-running commands the defaults back.
_GC_DEFAULT = gc.get_threshold()
gc.set_threshold(20_000, 50, 1000)

import click  # noqa: E402

from trainlint import __version__  # noqa: E402

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _split(values: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def selection_options(f):
    options = [
        click.option("--select", multiple=True, help="Rule codes, code prefixes or names to check (comma-separated)."),
        click.option("--ignore", multiple=True, help="Rule codes, code prefixes or names to skip."),
        click.option("--exclude", multiple=True, help="Glob patterns of files/folders a folder walk skips, "
                     "e.g. '*.ipynb' (comma-separated; replaces [tool.trainlint] exclude)."),
        click.option("--extend-select", multiple=True, help="Add to the configured selection."),
        click.option("--gpu", help='Target GPU, e.g. "A100-80GB", "H100", "RTX 4090", or "auto" (nvidia-smi).'),
        click.option("--gpus", type=click.IntRange(min=1), help="World size (GPUs) when no launch line says."),
        click.option("--transformers-version", help="Target transformers version (default: [tool.trainlint], the "
                     "installed package, a pin in requirements*.txt/pyproject.toml, else the newest known)."),
        click.option("--trl-version", help="Target TRL version (found like --transformers-version)."),
        click.option("--base", help="Git revision that lr-not-scaled compares with (default HEAD)."),
        click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
                     help="A pyproject.toml to read [tool.trainlint] from (default: the nearest one)."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


def _light_pydantic() -> None:
    """trainlint's own models never need pydantic plugins; looking for them scans every
    installed distribution's entry points on the first model (~7 ms of a one-file check).
    Only for commands that start no Python child (the variable would be inherited)."""
    import os

    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def _settings(paths: list[Path], **kw):
    from trainlint.config import load_settings

    config_path = kw.pop("config_path", None)
    overrides = {
        "select": _split(kw.get("select") or ()) or None,
        "ignore": _split(kw.get("ignore") or ()) or None,
        "exclude": _split(kw.get("exclude") or ()) or None,
        "extend-select": _split(kw.get("extend_select") or ()) or None,
        "gpu": kw.get("gpu"),
        "gpus": kw.get("gpus"),
        "transformers-version": kw.get("transformers_version"),
        "trl-version": kw.get("trl_version"),
        "base": kw.get("base"),
        "fail-on": kw.get("fail_on"),
    }
    start = config_path if config_path is not None else (paths[0] if paths else None)
    return load_settings(start, overrides)


def _preflight(settings, paths: list[Path], base_given: bool) -> None:
    """Notes before the run (unknown versions, --gpu auto); usage errors raise ConfigError."""
    from trainlint.preflight import preflight

    for note in preflight(settings, paths, base_given):
        click.echo(f"trainlint: note: {note}", err=True)


def _color() -> bool | None:
    """NO_COLOR (https://no-color.org) turns colour off, FORCE_COLOR on; else the terminal decides."""
    import os

    if os.environ.get("NO_COLOR"):
        return False
    force = os.environ.get("FORCE_COLOR")
    if force and force.lower() not in ("0", "false", "no"):
        return True
    return None


def _write_guarded(write) -> bool:
    """Run ``write`` (which prints to stdout); False when the reader closed the pipe (``| head``):
    stdout is then silenced, and the exit code is still the findings' one."""
    try:
        write()
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return False
    return True


def _fail(message: str) -> None:
    click.echo(f"trainlint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _paths_or_stdin(paths, stdin_filename: str | None,
                    apply_: bool = False) -> tuple[list[Path], dict[str, str], str | None]:
    """The paths to check (``.`` when none), and for ``-`` the text read from stdin under
    ``--stdin-filename`` (an overlay) and that name; usage errors exit 2."""
    path_list = list(paths) or [Path(".")]
    if not any(str(p) == "-" for p in path_list):
        if stdin_filename:
            _fail("--stdin-filename needs `-` as the path")
        return path_list, {}, None
    if len(path_list) != 1:
        _fail("`-` (stdin) cannot be combined with other paths")
    if apply_:
        _fail("`fix -` prints the fixed text; --apply needs files")
    name = os.path.normpath(stdin_filename or "stdin.py")
    return [Path(name)], {name: sys.stdin.read()}, name


class _LazyGroup(click.Group):
    """Every command but ``check`` is imported only when it runs (or for --help), so that
    none costs ``trainlint check`` any start-up time; those from optional parts (verify,
    estimate, server) are left out when their modules cannot be imported."""

    lazy: dict[str, tuple[str, str]] = {"fix": ("trainlint.cli_commands", "fix"),
                                        "rules": ("trainlint.cli_commands", "rules_cmd"),
                                        "gpus": ("trainlint.cli_commands", "gpus_cmd"),
                                        "rule": ("trainlint.cli_commands", "rule_cmd"),
                                        "verify": ("trainlint.verify.command", "verify"),
                                        "estimate": ("trainlint.estimate_command", "estimate"),
                                        "server": ("trainlint.server.command", "server")}
    optional = frozenset({"verify", "estimate", "server"})  # absent when their extras are

    def _load(self, name: str) -> click.Command | None:
        import importlib

        module, attr = self.lazy[name]
        if name not in self.optional:  # trainlint's own commands (``cli_commands``)
            return getattr(importlib.import_module(module), attr)
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            return None

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        names.update(n for n in self.lazy if n not in names and self._load(n) is not None)
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is None and cmd_name in self.lazy:
            cmd = self._load(cmd_name)
        return cmd


class _Guarded(_LazyGroup):
    """A crash of trainlint itself is one line on stderr and exit code 2, never a traceback
    (set ``TRAINLINT_TRACEBACK=1`` to see it)."""

    def invoke(self, ctx: click.Context):
        import os

        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort, SystemExit,
                KeyboardInterrupt):
            raise
        except BrokenPipeError:  # `trainlint rules | head`: the reader went away; nothing failed
            _silence_stdout()
            sys.exit(EXIT_OK)
        except Exception as exc:  # noqa: BLE001 - last resort: report, do not crash
            if os.environ.get("TRAINLINT_TRACEBACK"):
                raise
            from trainlint.engine import internal_error

            d = internal_error(".", "the command", exc)
            click.echo(f"trainlint: {d.message}", err=True)
            sys.exit(EXIT_ERROR)


def _silence_stdout() -> None:
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


@click.group(cls=_Guarded, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trainlint")
def main() -> None:
    """trainlint: find and fix pitfalls in Hugging Face training setups, before they run."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@selection_options
@click.option("--format", "fmt", type=click.Choice(["text", "concise", "json", "sarif", "github"]),
              help="Output format (default: text on a terminal, concise otherwise).")
@click.option("--statistics", is_flag=True, help="Show counts per rule instead of each finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--fail-on", type=click.Choice(["info", "warning", "error"]),
              help="Lowest severity that makes the exit code 1 (default: warning).")
@click.option("--stdin-filename", help="With `-` as the path: the file name the text on stdin stands for "
              "(shown in findings, picks the file kind and the pyproject.toml; default: stdin.py).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the findings cache (.trainlint_cache/).")
@click.option("-j", "--jobs", type=click.IntRange(min=1),
              help="Processes for many files (default: one per core, used above 50 stand-alone scripts).")
def check(paths: tuple[Path, ...], fmt: str | None, statistics: bool, exit_zero: bool,
          stdin_filename: str | None, no_cache: bool, jobs: int | None, **kw) -> None:
    """Check training scripts, launch lines and configs (files or folders, `-` for stdin; default: .)."""
    _light_pydantic()
    from trainlint.config import ConfigError
    from trainlint.engine import lint, nothing_checked
    from trainlint.report import render

    path_list, overlay, _ = _paths_or_stdin(paths, stdin_filename)
    try:
        settings = _settings(path_list, **kw)
        _preflight(settings, path_list, bool(kw.get("base")))
        result = lint(path_list, settings, overlay, jobs=jobs, cache=not no_cache and not overlay)
    except ConfigError as e:
        _fail(str(e))
        return
    from trainlint.preflight import after_run_notes

    for note in after_run_notes(settings, result.texts):
        click.echo(f"trainlint: note: {note}", err=True)
    fmt = fmt or ("text" if sys.stdout.isatty() else "concise")
    color = _color()
    empty = None if overlay else nothing_checked(path_list, result, settings)
    if empty is not None and fmt in ("text", "concise"):
        if fmt == "text" and not statistics:
            _write_guarded(lambda: click.echo(f"{empty}."))
        else:
            click.echo(f"trainlint: {empty}.", err=True)
    else:
        _write_guarded(lambda: render(fmt, result.diagnostics, result.texts, sys.stdout, statistics=statistics,
                                      color=color if fmt == "text" else False))
    if result.internal_errors:
        sys.exit(EXIT_ERROR)
    failing = [d for d in result.diagnostics if d.severity.rank >= settings.fail_on.rank]
    sys.exit(EXIT_FINDINGS if failing and not exit_zero else EXIT_OK)


# Commands after which the process has nothing left to clean up: no child processes, no
# temporary folders, every write already atomic and closed.
_QUICK_EXIT_COMMANDS = frozenset({"check", "fix", "rules", "rule", "gpus"})


def entry() -> None:
    """The console script (and ``python -m trainlint``): run the command, then, for the
    commands above, leave with ``os._exit`` once stdout and stderr are flushed.

    A normal interpreter exit tears down every imported module and runs the garbage
    collector, about 40-50 ms of a one-file ``check`` on a 2-core machine, and nothing in
    those commands needs it (mypy ends the same way). Tests call ``main`` through click's
    runner and never come here.
    """
    import os

    command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    if command not in _QUICK_EXIT_COMMANDS:
        gc.set_threshold(*_GC_DEFAULT)  # the server and verify run for long: the usual collector
    elif command == "check":  # one run, then the exit (``fix`` goes on after each of its runs)
        from trainlint import engine

        engine.ENDS_AFTER_RUN = True  # the last task is never freed: the process ends with it
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    else:  # pragma: no cover - click's standalone mode always raises SystemExit
        code = EXIT_OK
    if command not in _QUICK_EXIT_COMMANDS:
        sys.exit(code)
    if code is None:
        code = EXIT_OK
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = EXIT_FINDINGS
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there; the exit
            pass  # code stays the findings' one (`trainlint check . | head -1` exits 1 every time)
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
