"""TL121 optim-package-missing."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

from trainlint import reads
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

_BNB = {"adamw_bnb_8bit", "adamw_8bit", "paged_adamw_32bit", "paged_adamw_8bit", "ademamix", "ademamix_8bit",
        "paged_ademamix_32bit", "paged_ademamix_8bit", "lion_32bit", "lion_8bit", "paged_lion_32bit",
        "paged_lion_8bit", "rmsprop_bnb", "rmsprop_bnb_8bit", "rmsprop_bnb_32bit"}


def package_for(optim: str) -> str | None:
    """The pip package an ``optim`` value needs (transformers 5.24 ``trainer_optimizer.py``)."""
    o = optim.lower()
    if o in _BNB:
        return "bitsandbytes"
    if o.startswith("galore_"):
        return "galore-torch"
    if o.startswith("apollo_"):
        return "apollo-torch"
    if o in ("lomo", "adalomo"):
        return "lomo-optim"
    if o == "grokadamw":
        return "grokadamw"
    if o.startswith("schedule_free_"):
        return "schedulefree"
    if o in ("adamw_torch_4bit", "adamw_torch_8bit"):
        return "torchao"
    if o == "stable_adamw":
        return "torch-optimi"
    return None


DEP_FILES = ("requirement*.txt", "requirements/*.txt", "pyproject.toml", "setup.py", "setup.cfg",
             "environment.yml", "environment.yaml")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def dependency_files(script: Path) -> list[Path]:
    """Dependency files from the script's folder up to the repository root (a folder with
    ``.git``) or the filesystem root."""
    found: list[Path] = []
    d = script.resolve().parent
    while True:
        files, at_root = _dependency_files_at(str(d), _folder_stamp(d))
        found.extend(Path(p) for p in files)
        if at_root or d.parent == d:
            break
        d = d.parent
    return found


def _folder_stamp(d: Path) -> tuple:
    """When the folder's and its ``requirements/`` folder's listings last changed (a file or
    ``.git`` added or removed changes them); None for a folder that is not there."""
    out = []
    for p in (d, d / "requirements"):
        try:
            out.append(os.stat(p).st_mtime_ns)
        except OSError:
            out.append(None)
    return tuple(out)


@reads.memo(maxsize=1024)
def _dependency_files_at(folder: str, _stamp: tuple) -> tuple[tuple[str, ...], bool]:
    """The dependency files of one folder and whether it is a repository root, once per
    version of its listing: every setup of a notebook collection looks in the same folders
    (seven patterns each)."""
    d = Path(folder)
    reads.note_isdir(d / ".git")  # the result depends on these (the cache)
    found: list[str] = []
    for pattern in DEP_FILES:
        reads.note_glob(d, pattern)
        found.extend(str(p) for p in sorted(p for p in d.glob(pattern) if p.is_file()))
    return tuple(found), (d / ".git").exists()


def lists_package(files: list[Path], package: str) -> bool:
    """Whether one of ``files`` names ``package`` as a word (names compared normalized: ``-``,
    ``_`` and ``.`` alike, any case)."""
    want = _norm(package)
    for f in files:
        reads.note(f)
        try:
            st = f.stat()
        except OSError:
            continue
        if want in _names_in(str(f), (st.st_mtime_ns, st.st_size)):
            return True
    return False


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@reads.memo(maxsize=256)
def _names_in(path_text: str, _stamp: tuple) -> frozenset[str]:
    """The normalized words of a dependency file, once per file version: each optim value's
    package and each of the training stack's is asked of the same files by every setup (a
    notebook collection's 900 notebooks share its ``pyproject.toml``); an unreadable file has none."""
    try:
        text = Path(path_text).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    return frozenset(_norm(m.group(0)) for m in _TOKEN.finditer(text))


# a dependency file that names none of these describes another environment than the training's
_TRAINING_STACK = ("torch", "transformers", "trl", "accelerate", "peft", "unsloth", "deepspeed")


def _installs_itself(setup: Setup, path: Path, package: str) -> bool:
    """The notebook or shell script installs ``package`` itself (``!pip install bitsandbytes``),
    or the script's inline metadata (PEP 723, ``# /// script``) lists it."""
    from trainlint.knowledge.versions import installs_named

    text = next((pf.text for pf in setup.scripts if pf.path == str(path)), None)
    return installs_named(package, path, text) is not None


class OptimPackageMissing(Rule):
    """
    ## What it does
    Flags an `optim` value that needs an optional package (`adamw_bnb_8bit`, `adamw_8bit`,
    `paged_*`, `lion_*`, `rmsprop_bnb*`, `ademamix*` need bitsandbytes; `galore_*` galore-torch;
    `apollo_*` apollo-torch; `lomo`/`adalomo` lomo-optim; `grokadamw` grokadamw;
    `schedule_free_*` schedulefree; `adamw_torch_4bit/8bit` torchao; `stable_adamw`
    torch-optimi) when the project's dependency files do not list that package. The files are
    looked for from the script's folder up to the repository root: `requirements*.txt`,
    `pyproject.toml`, `setup.py`, `setup.cfg`, `environment.yml`. Without any dependency file
    the rule is silent, and so it is when those files name none of the training stack (torch,
    transformers, trl, accelerate, peft, unsloth, deepspeed: they describe another environment,
    such as the tooling of a notebook collection), when the notebook or shell script installs the
    package itself (`!pip install bitsandbytes`), or when the script's inline metadata
    (PEP 723 `# /// script` dependencies) lists it.

    ## Why is this bad?
    The Trainer imports the optimizer's package only when it builds the optimizer, after the
    model has been downloaded and loaded (and on every node): a missing package is an
    `ImportError` minutes into the job, on a fresh environment built from these files.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", optim="adamw_bnb_8bit")  # requirements.txt: torch, transformers
    ```

    ## Use instead
    Add `bitsandbytes` to `requirements.txt`, or use `optim="adamw_torch_fused"`.

    ## Fix safety
    No automatic fix: adding a dependency or changing the optimizer is the user's choice.

    ## References
    - transformers 5.24 `trainer_optimizer.py` (`is_bitsandbytes_available`, `is_galore_torch_available`, ...)
    """

    code = "TL121"
    name = "optim-package-missing"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("optim",)
    fix_safety = "none"
    summary = "an optim value whose package the project's dependency files do not list"

    cases = [
        Case(
            files={
                "requirements.txt": "torch\ntransformers>=4.40\n",
                "train.py": 'from transformers import TrainingArguments\nargs = TrainingArguments(output_dir="o", optim="adamw_bnb_8bit")\n',
            },
        ),
        Case(
            files={
                "pyproject.toml": '[project]\nname = "x"\ndependencies = ["transformers", "bitsandbytes"]\n',
                "src/train.py": 'from transformers import TrainingArguments\nOPT = "galore_adamw"\n'
                                'args = TrainingArguments(output_dir="o", optim=OPT)\n',
            },
            note="found by walking up; bitsandbytes is listed but galore-torch is not",
        ),
        # must not flag
        Case(
            files={
                "requirements.txt": "torch\ntransformers\nbitsandbytes==0.45.0\n",
                "train.py": 'from transformers import TrainingArguments\nargs = TrainingArguments(output_dir="o", optim="paged_adamw_8bit")\n',
            },
            flags=False,
        ),
        Case(
            'from transformers import TrainingArguments\nargs = TrainingArguments(output_dir="o", optim="adamw_8bit")\n',
            flags=False, note="no dependency file: nothing to compare with",
        ),
        Case(
            files={
                "pyproject.toml": '[project]\nname = "notebooks"\ndependencies = ["ipykernel", "nbconvert"]\n',
                "nb/train.py": 'from trl import SFTConfig\nargs = SFTConfig(output_dir="o", optim="adamw_8bit")\n',
            },
            flags=False, note="the dependency file is the notebook tooling's: it names no training library",
        ),
        Case(
            files={
                "requirements.txt": "torch\ntransformers\n",
                "molab/train.py": '# /// script\n# dependencies = [\n#     "bitsandbytes>=0.43.0",\n#     "trl",\n# ]\n'
                                  '# ///\nfrom trl import SFTConfig\nargs = SFTConfig(output_dir="o", optim="adamw_8bit")\n',
            },
            flags=False, note="the script's inline metadata (PEP 723) lists bitsandbytes",
        ),
        Case(
            files={
                "requirements.txt": "torch\n",
                "train.py": 'from transformers import TrainingArguments\nargs = TrainingArguments(output_dir="o", optim="adamw_torch_fused")\n',
            },
            flags=False,
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site in setup.sites:
            v = site.get("optim")
            if v is None or not isinstance(v.value, str):
                continue
            package = package_for(v.value)
            if package is None:
                continue
            anchor = Path(site.path)
            if _installs_itself(setup, anchor, package):
                continue
            files = dependency_files(anchor)
            if not files or lists_package(files, package):
                continue
            if not any(lists_package(files, p) for p in _TRAINING_STACK):
                continue  # files of another environment (a notebook collection's tooling): not the run's
            looked = ", ".join(sorted({f.name for f in files}))
            yield self.diagnostic(
                v.span or v.key_span,  # type: ignore[arg-type]
                f"optim={v.value!r} needs the {package} package, which none of the project's dependency files "
                f"({looked}) lists: the Trainer fails with an ImportError when it builds the optimizer, after "
                f"loading the model; add {package} or use optim=\"adamw_torch_fused\"")
