"""trainlint verify shim: loaded by every Python process that `trainlint verify` starts.

It does nothing unless TRAINLINT_SMOKE_DIR is set.  It must stay cheap: the launcher
processes (torchrun, accelerate) import it too.  It then loads the `sitecustomize` that it
shadows (for example Debian's apport hook), under the name `sitecustomize`.
"""
import os as _os
import sys as _sys


def _trainlint_boot():
    if _os.environ.get("TRAINLINT_SMOKE_DIR"):
        try:
            import _trainlint_smoke

            _trainlint_smoke.install()
        except Exception as exc:  # never break the user's process
            _sys.stderr.write("trainlint verify: shim not installed: %r\n" % (exc,))


def _trainlint_chain_load():
    here = _os.path.dirname(_os.path.abspath(__file__))
    try:
        import importlib.machinery
        import importlib.util

        rest = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
        if spec is None or spec.loader is None:
            return
        # The module object must be named `sitecustomize` (loaders check the name) and is
        # not put into sys.modules, where this module already sits.
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception as exc:
        _sys.stderr.write("trainlint verify: shadowed sitecustomize failed: %r\n" % (exc,))


_trainlint_boot()
_trainlint_chain_load()
