"""Linking files into training setups, with provenance.

``link_setups(ws, settings)`` follows what the files say about each other:

* a launch line (shell script, or a Markdown code block passed explicitly) runs a script:
  the script is read, its TrainingArguments calls are resolved with the launch flags
  overriding ``args.X`` argparse defaults, and when the script builds its TrainingArguments
  through ``HfArgumentParser`` the launch flags (or the args file given as the only argument)
  *are* the TrainingArguments values: an ``ArgsSite`` with origin FLAG / ARGSFILE;
* ``deepspeed=`` (a literal, an argparse default, a flag, an args-file key), ``--deepspeed``,
  ``accelerate launch --config_file`` and accelerate's ``deepspeed_config_file`` link the
  DeepSpeed and accelerate configs;
* the world size comes from the launcher (``--nproc_per_node``, ``--num_processes``,
  ``--num_gpus``/``--num_nodes``, ``--include``, ``CUDA_VISIBLE_DEVICES``) or the accelerate
  config (``num_processes``, else ``gpu_ids``).

Paths are relative to the file that names them. A referenced file that is not among the
checked files is read from disk through ``resolve.read_file`` (parsed once); a missing one is
a TL004 ``missing-reference`` finding at the reference. Files that nothing links (a DeepSpeed
config, an accelerate config or an args file on its own, a script no launch line runs) become
setups of their own, so their single-file rules still run.

``Setup.extra`` keys: ``launch`` (LaunchCommand), ``launch_file``, ``deepspeed``
(DeepSpeedConfig), ``deepspeed_ref`` (the Value naming it), ``accelerate`` (AccelerateConfig),
``accelerate_ref``, ``args_file`` (ArgsFile), ``site_refs`` (id(site) -> how to rebuild the site
at another git revision, for lr-not-scaled).
"""

from __future__ import annotations

import ast
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainlint.lazyre import lazy
from trainlint import reads
from trainlint.folders import reference_folders as _reference_folders, repository_root as _repository_root
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.record import Record, replace
from trainlint.setup import (
    ACCELERATE,
    ARGSFILE,
    FLAG,
    PYTHON,
    ArgsSite,
    Setup,
    Value,
    library_consumer,
    project_consumer,
    unknown_consumer,
)
from trainlint.workspace import (  # noqa: F401 - re-exported
    MAX_REFERENCE_LEVELS,
    reference_folders,
    repository_root,
)

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.config import Settings
    from trainlint.workspace import ParsedFile, Workspace
    from trainlint.sources.python import PythonFile
    from trainlint.sources.shell import Flag, LaunchCommand

ARGS_FILE_SUFFIXES = (".json", ".yaml", ".yml")
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")


# -- reading referenced files ---------------------------------------------------------------


def _looked_text(folders: list[str], ref_path: str) -> str:
    if not folders:
        return "nowhere"
    looked = os.path.normpath(os.path.join(folders[0], ref_path))
    if len(folders) > 1:
        looked += f" and in the {len(folders) - 1} folder{'s' if len(folders) > 2 else ''} above, up to " \
                  f"{os.path.normpath(folders[-1]) or '.'}"
    return looked


def _missing(ws: Workspace, ref_path: str, span, what: str, folders: list[str],
             severity: Severity = Severity.ERROR, why: str = "", then: str = "",
             looked_for: str = "") -> None:
    """A TL004 finding: ``why`` says why the path is clearly run from elsewhere (info) or
    what else is known (a file of that name elsewhere); ``then`` what trainlint does instead."""
    from trainlint.sources.shell import SCRIPT_DIR
    from trainlint.workspace import input_problem

    ref_path = ref_path.replace(SCRIPT_DIR, "$(dirname $0)")
    looked = _looked_text(folders, looked_for or ref_path)
    if not folders:
        message = f"{what} {ref_path!r} is not checked: {why}"
    elif severity is Severity.INFO:
        message = f"{what} {ref_path!r} is not in this repository: {why} (looked for {looked})"
    else:
        message = f"{what} {ref_path!r} does not exist (looked for {looked}){'; ' + why if why else ''}"
    if then:
        message += f"; {then}"
    d = input_problem("TL004", "missing-reference", span.path, message, span.line, span.column,
                      severity=severity)
    ws.problems.append(replace(d, end_line=span.end_line, end_column=span.end_column))


# (``reference_folders`` and ``repository_root`` live in ``workspace``: module lookup uses them too;
# while setups are built, ``trainlint.folders`` keeps their answers per folder)


# -- where a referenced path is ---------------------------------------------------------------

FOUND, GENERATED, MISSING, ELSEWHERE, UNRESOLVED = "found", "generated", "missing", "elsewhere", "unresolved"
_LEADING_VARS = lazy(r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}?/)+")


class Located(Record):
    """Where a path written in a file is: ``verdict`` is FOUND (``path`` is the file),
    GENERATED (the script writes it itself, ``cat > ds.json <<EOF``), MISSING (it should be in
    the repository: ``severity`` says how likely), ELSEWHERE (clearly run from another place:
    ``why``), or UNRESOLVED (a shell variable that cannot be resolved)."""

    __slots__ = ("verdict", "path", "folders", "severity", "why", "note", "__dict__")
    verdict: str
    path: str | None
    folders: list[str]
    severity: Severity
    why: str
    note: str  # how it was found, when not plainly (a leading $VAR taken as the root)

    def __init__(self, verdict: str, path: str | None = None, folders: list[str] | None = None,
                 severity: Severity = Severity.ERROR, why: str = "", note: str = "") -> None:
        self.verdict = verdict
        self.path = path
        self.folders = [] if folders is None else folders
        self.severity = severity
        self.why = why
        self.note = note


def _start_folders(base_file: str, launch: LaunchCommand | None) -> tuple[list[str] | None, str]:
    """The folders a relative path of ``launch`` starts from, after its ``cd``s; None (with
    why) when an earlier ``cd`` goes somewhere that cannot be resolved."""
    from trainlint.sources.shell import SCRIPT_DIR

    cwd = launch.cwd if launch is not None else None
    if launch is not None and not launch.cwd_known:
        return None, "an earlier cd goes to a folder that cannot be resolved statically"
    if cwd is None:
        return _reference_folders(base_file), ""
    if cwd.startswith(SCRIPT_DIR):
        return [os.path.normpath(os.path.join(os.path.dirname(base_file), cwd[len(SCRIPT_DIR):].lstrip("/")))], ""
    if os.path.isabs(cwd):
        return [cwd], ""
    return [os.path.normpath(os.path.join(f, cwd)) for f in _reference_folders(base_file)], ""


def locate(ws: Workspace, base_file: str, ref: str, launch: LaunchCommand | None = None,
           doc: Any = None, _tail_of: str = "", verdict: bool = True) -> Located:
    """Find the file ``ref`` written in ``base_file`` (by ``launch``, after its ``cd``s;
    ``doc`` the shell document that may write the file itself), and when it is not there,
    how likely it is that the repository should contain it. The places looked at where no
    file was are added to ``ws.absent`` (the findings depend on their absence: the cache
    checks it). ``verdict=False``: only whether it is there (a caller that reads nothing but
    FOUND: ``python -m``'s other candidates); when it is not, a Located that says UNRESOLVED,
    without judging how likely it is (nor noting what that judgement reads)."""
    from trainlint.workspace import norm

    if not ref:
        return Located(UNRESOLVED)
    from trainlint.sources.shell import has_placeholder

    if "$" in ref or "`" in ref or has_placeholder(ref):
        m = _LEADING_VARS.match(ref)
        rest = ref[m.end():] if m is not None else ""
        if not rest or "$" in rest or "`" in rest or has_placeholder(rest):
            return Located(UNRESOLVED, why=f"{ref!r} uses a shell variable that cannot be resolved")
        loc = locate(ws, base_file, rest, launch, doc, _tail_of=ref, verdict=verdict)
        if loc.verdict == FOUND:
            loc.note = f"{m.group().rstrip('/')} taken as the folder that holds {rest}"
            return loc
        var = m.group().rstrip("/")
        return Located(ELSEWHERE, folders=loc.folders, severity=Severity.INFO,
                       why=f"it is under {var}, which this repository does not set")
    from trainlint.sources.shell import SCRIPT_DIR

    ref_x = os.path.expanduser(ref)
    if ref_x.startswith(SCRIPT_DIR):  # $(dirname "$0")/train.py: beside the shell file
        ref_x = os.path.normpath(os.path.join(os.path.dirname(base_file) or ".",
                                              ref_x[len(SCRIPT_DIR):].lstrip("/")))
    root = _repository_root(base_file)
    if os.path.isabs(ref_x) or ref_x != os.path.expanduser(ref):
        folders: list[str] | None = [""]
    else:
        folders, why = _start_folders(base_file, launch)
        if folders is None:
            return Located(ELSEWHERE, severity=Severity.INFO, why=why)
    candidates = [norm(os.path.join(f, ref_x)) for f in folders]
    path = next((c for c in candidates if c in ws.files or c in ws.overlay or os.path.exists(c)), None)
    ws.absent.update(candidates[:candidates.index(path)] if path is not None else candidates)
    if path is not None:
        return Located(FOUND, path=path, folders=folders)
    if not verdict:
        return Located(UNRESOLVED, folders=folders)
    # what the verdict below looks at: whether the folders exist, files of the same name
    for d in dict.fromkeys([*folders, *(os.path.dirname(c) for c in candidates)]):
        reads.note_isdir(d or ".")
    if root is not None:
        reads.note(reads.virtual(reads.SAME_NAME, root, os.path.basename(ref_x)))
    if _generated(doc, launch, ref_x):
        return Located(GENERATED, folders=folders)
    verdict = _likelihood(ws, base_file, ref_x, launch, doc, folders, candidates, root)
    verdict.folders = folders
    if base_file.lower().endswith(MARKDOWN_SUFFIXES) and verdict.verdict == MISSING:
        # a command in the docs, run from wherever the prose says: a file whose folder is
        # here should be (warning); a bare name or another folder is most likely elsewhere
        folder_here = os.path.dirname(ref_x) and any(os.path.isdir(os.path.dirname(c)) for c in candidates)
        verdict.severity = Severity.WARNING if folder_here else Severity.INFO
        if verdict.severity is Severity.INFO:
            verdict.verdict = ELSEWHERE
            verdict.why = (verdict.why + "; " if verdict.why else "") + \
                "a command in the docs, run from the folder its text names"
    return verdict


def _generated(doc: Any, launch: LaunchCommand | None, ref: str) -> bool:
    generated = getattr(doc, "generated", None)
    if not generated:
        return False
    from trainlint.sources.shell import norm_path

    cwd = launch.cwd if launch is not None else None
    key = norm_path(ref if os.path.isabs(ref) else os.path.join(cwd or "", ref))
    return key in generated


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _likelihood(ws: Workspace, base_file: str, ref: str, launch: LaunchCommand | None, doc: Any,
                folders: list[str], candidates: list[str], root: str | None) -> Located:
    from trainlint.knowledge.frameworks import looks_like_hf_example
    from trainlint.sources.shell import SCRIPT_DIR, norm_path

    info = Severity.INFO
    cwd = launch.cwd if launch is not None else None
    from trainlint.sources.shell import filler_folder

    filler = filler_folder(ref)  # a template's placeholder folder
    if filler is not None:
        return Located(ELSEWHERE, severity=info,
                       why=f"{filler!r} in it is a placeholder, filled in before a run (a template)")
    # inside a repository the script clones itself
    rel = norm_path(ref if os.path.isabs(ref) else os.path.join(cwd or "", ref))
    for c in getattr(doc, "cloned", None) or ():
        if c and _under(rel, c):
            return Located(ELSEWHERE, severity=info, why=f"it is inside {c}, which the script clones with git clone")
    if root is not None:
        absolute = [os.path.abspath(c) for c in candidates]
        if all(not _under(a, root) for a in absolute):
            where = "an absolute path outside this repository" if os.path.isabs(ref) else \
                "the path leads outside this repository"
            return Located(ELSEWHERE, severity=info, why=where)
    elif os.path.isabs(ref):
        return Located(ELSEWHERE, severity=info, why="an absolute path, outside the checked files")
    if cwd is not None and looks_like_hf_example(cwd + "/"):
        return Located(ELSEWHERE, severity=info,
                       why=f"the command runs in {cwd}, laid out as the Hugging Face examples of another checkout")
    if cwd is not None and not os.path.isabs(ref) and not any(os.path.isdir(f) for f in folders):
        shown = cwd.replace(SCRIPT_DIR, "$(dirname $0)")
        return Located(ELSEWHERE, severity=info, why=f"an earlier cd goes to {shown}, which is not in this repository")
    same_name = _same_name(root, os.path.basename(ref)) if root is not None else []
    hint = f"a file of that name is at {same_name[0]}" if same_name else ""
    folder = os.path.dirname(ref)
    if not folder:
        if not same_name and os.path.basename(ref).startswith("run_") and launch is not None \
                and _training_flags(launch) >= 2:
            return Located(ELSEWHERE, severity=info,
                           why="named as a Hugging Face example script, run from its own checkout")
        return Located(MISSING, severity=Severity.ERROR, why=hint)
    if any(os.path.isdir(os.path.dirname(c)) for c in candidates):
        return Located(MISSING, severity=Severity.ERROR, why=hint)  # its folder is here: the file should be
    if not same_name and looks_like_hf_example(ref):
        return Located(ELSEWHERE, severity=info,
                       why="laid out as the Hugging Face examples, run from a transformers checkout")
    top = os.path.normpath(ref).replace(os.sep, "/").split("/", 1)[0]
    if hint or not top or top in (".", ".."):  # (an absolute path inside the repository: its folders are known)
        return Located(MISSING, severity=Severity.WARNING, why=hint)
    folders_named: list[str] = []
    if root is not None:
        reads.note(reads.virtual(reads.SAME_NAME, root, top + "/"))
        folders_named = _same_name(root, top + "/")
    if folders_named:
        return Located(MISSING, severity=Severity.WARNING,
                       why=f"no folder {top!r} beside it or above it; one is at {folders_named[0]}")
    near = _near_folder(top, folders)
    if near:
        return Located(MISSING, severity=Severity.WARNING,
                       why=f"no folder {top!r} in this repository; did you mean {near!r}?")
    # open-instruct's `python oe-eval-internal/oe_eval/launch.py`, `python src/scripts/train/sft/
    # OLMo-sft.py`: neither the folder nor a file of that name is anywhere in the repository, so
    # the command runs in a checkout of another project
    return Located(ELSEWHERE, severity=info,
                   why=f"no folder {top!r} and no file named {os.path.basename(ref)!r} anywhere in this "
                       "repository, so the command most likely runs in a checkout of another project")


def _near_folder(top: str, folders: list[str]) -> str:
    """A folder beside the start folders whose name is close to ``top`` (a typo: ``scirpts``
    for ``scripts``), or ""."""
    import difflib

    names: list[str] = []
    for f in folders:
        reads.note(f or ".")  # its listing: a folder appearing there changes the verdict
        try:
            names += [n for n in os.listdir(f or ".") if os.path.isdir(os.path.join(f or ".", n))]
        except OSError:
            continue
    close = difflib.get_close_matches(top, names, n=1, cutoff=0.8)
    return close[0] if close else ""


def _same_name(root: str, name: str) -> list[str]:
    from trainlint.sources.files import same_name

    return same_name(root, name)


def _training_flags(launch: LaunchCommand) -> int:
    from trainlint.knowledge import training_args as ta

    n = 0
    for f in launch.script_args:
        try:
            if ta.history("TrainingArguments", f.key).known:
                n += 1
        except ta.UnknownClassError:  # pragma: no cover - the base class is always known
            return 0
    return n


def load_referenced(ws: Workspace, base_file: str, ref: str, span, what: str,
                    launch: LaunchCommand | None = None, doc: Any = None,
                    then: str = "") -> ParsedFile | None:
    """The file ``ref`` names, relative to ``base_file``'s folder or a folder above it up to
    the repository root (``reference_folders``, nearest first; after the ``cd``s of
    ``launch``); read once; a TL004 finding at ``span`` when it exists in none of them, at
    the severity its likelihood deserves (``locate``). Paths with unresolved shell
    variables, and files the script writes itself, are not reported."""
    from trainlint.workspace import read_file

    quiet = False
    nb = _notebook_of(ws, base_file)
    if nb is not None:
        # a notebook: the files its %%writefile cells wrote before this line come first;
        # paths are relative to the notebook's folder (its working directory)
        written = nb.written_file(ref, span.line if span is not None else 10 ** 9)
        if written is not None:
            return written
        base_file = nb.path
        # files a notebook downloads, clones or finds after a %cd are not on disk here
        quiet = nb.fetches or os.path.isabs(ref)
    loc = locate(ws, base_file, ref, launch, doc)
    if loc.verdict in (MISSING, ELSEWHERE):
        if span is not None and not quiet:
            _missing(ws, ref, span, what, loc.folders, loc.severity, loc.why, then)
        return None
    if loc.verdict != FOUND or loc.path is None:
        return None
    path = loc.path
    if path in ws.files:
        # a walked file kept silent as "not a training config" is one after all
        ws.problems.extend(ws.deferred_problems.pop(path, []))
        return ws.files[path]
    if os.path.isdir(path):
        return None
    return read_file(ws, path, explicit=True)


def _notebook_of(ws: Workspace, path: str):
    if not path.endswith(".ipynb") and "::" not in path:
        return None
    from trainlint.sources.notebook import notebook_of

    return notebook_of(ws, path)


def _linkable(ws: Workspace) -> list[ParsedFile]:
    """The workspace's files, a notebook also as its Python program and the files it writes."""
    out = []
    for f in ws.files.values():
        out.append(f)
        if f.kind == "notebook" and f.doc is not None:
            out.extend(f.doc.parsed_files())
    return out


def _view(pf: ParsedFile | None, cls, make, json_only: bool = False):
    """``pf``'s document seen as ``cls`` (a DeepSpeed, accelerate or args-file view): the
    document itself when the reader already made one, else ``make(root)`` over a mapping read
    as generic JSON/YAML (a file referenced as such whose content did not say so)."""
    if pf is None or pf.doc is None:
        return None
    if isinstance(pf.doc, cls):
        return pf.doc
    root = getattr(pf.doc, "root", pf.doc)
    if getattr(root, "is_mapping", False) and (not json_only or pf.path.endswith(".json")):
        return make(root)
    return None


def as_deepspeed(pf: ParsedFile | None):
    from trainlint.sources.deepspeed import DeepSpeedConfig

    return _view(pf, DeepSpeedConfig, DeepSpeedConfig, json_only=True)


def as_accelerate(pf: ParsedFile | None):
    from trainlint.sources.accelerate import AccelerateConfig

    return _view(pf, AccelerateConfig, AccelerateConfig)


def as_argsfile(pf: ParsedFile | None):
    from trainlint.sources.argsfile import ArgsFile

    return _view(pf, ArgsFile, ArgsFile.from_root)


# -- scripts -----------------------------------------------------------------------------------


def hf_parser_class(pf: PythonFile) -> str | None:
    """The TrainingArguments-like class of ``HfArgumentParser((A, B, TrainingArguments))`` (or
    ``TrlParser``) in the script, or None when it builds no such parser."""
    from trainlint.consumers import main_parser

    use = main_parser(pf)
    return use.class_name if use is not None else None


def annotate_python_sites(pf: PythonFile) -> None:
    """Give each ``TrainingArguments(...)``-like call of the file its consumer (the class, and
    the frameworks that patch it). Done once per file; the sites are shared by setups."""
    if getattr(pf, "_consumers_set", False):
        return
    from trainlint.consumers import python_call_consumer

    fallbacks = _fallback_calls(pf) if pf.args_calls else set()
    for tac in pf.args_calls:
        if tac.args.consumer is None:
            if id(tac.site.node) in fallbacks:
                tac.args.consumer = unknown_consumer(
                    f"the fallback {tac.class_name}(...) of a function called without arguments (not a run's configuration)")
                continue
            func = tac.site.node.func
            callee = pf.source_of(func) or tac.class_name
            tac.args.consumer = python_call_consumer(pf, tac.class_name, callee, tac.site.node.lineno, tac.site)
    pf._consumers_set = True  # type: ignore[attr-defined]


def _fallback_calls(pf: "PythonFile") -> set[int]:
    """The calls of ``if args is None: args = TrainingArguments(output_dir="tmp_trainer")`` in a
    function taking ``args``: the default a trainer class builds when its caller passes none
    (transformers' own ``Trainer.__init__``, vendored by ChatGLM's ptuning/trainer.py)."""
    out: set[int] = set()
    functions = None  # listed at the first such test (most files have none)
    for node in pf.of_type(ast.If):
        test = node.test
        if not (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1
                and isinstance(test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value is None):
            continue
        if functions is None:
            functions = [fn for kind in (ast.FunctionDef, ast.AsyncFunctionDef) for fn in pf.of_type(kind)]
        name = test.left.id
        inside = [fn for fn in functions if fn.lineno <= node.lineno <= (fn.end_lineno or fn.lineno)]
        fn = max(inside, key=lambda f: f.lineno, default=None)  # the innermost function holding it
        if fn is None or name not in {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}:
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and any(
                    isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                out.add(id(stmt.value))
    return out


def flag_value(flag: Flag, name: str | None = None) -> Value:
    from trainlint.setup import UNKNOWN

    value: Any = UNKNOWN if flag.unresolved else flag.literal()
    if flag.extra_values and not flag.unresolved:
        value = [flag.value, *(v for v, _ in flag.extra_values)]
    return Value(value=value, origin=FLAG, span=flag.value_span or flag.name_span, key_span=flag.name_span,
                 name=name or flag.key, key_text=flag.prefix + flag.name,
                 note="from a variable" if flag.definitions else "")


def negated_field(class_name: str, key: str) -> str | None:
    """``X`` for a flag ``--no_X`` that HfArgumentParser adds to a bool field ``X`` whose
    default is True (in some known version), unless ``no_X`` is a field itself (``no_cuda``)."""
    if not key.startswith("no_") or len(key) <= 3:
        return None
    from trainlint.knowledge import training_args as ta

    try:
        if ta.history(class_name, key).known:
            return None
        h = ta.history(class_name, key[3:])
    except ta.UnknownClassError:
        return None
    if not h.known or not any(d is True for _, d in h.default_changes):
        return None
    return key[3:]


def flag_site(launch: LaunchCommand, class_name: str, consumer=None, skip: tuple[str, ...] = ()) -> ArgsSite:
    """The launch line's script flags as TrainingArguments values (HfArgumentParser);
    ``--no_X`` becomes ``X=False`` (written as ``--no_X``). ``skip``: flags the parser itself
    takes (``TrlParser``'s ``--config``)."""
    values: dict[str, Value] = {}
    for f in launch.script_args:
        if f.prefix != "--" or f.key in skip:
            continue
        field = negated_field(class_name, f.key)
        if field is not None:
            values[field] = replace(flag_value(f, field), value=False)
            continue
        values[f.key] = flag_value(f)
    open_ended = any(f.unresolved and f.from_expansion for f in launch.script_args) \
        or any("$" in text for text, _ in launch.positionals)
    return ArgsSite(path=launch.path, class_name=class_name, values=values, open_ended=open_ended,
                    span=launch.span, consumer=consumer)


NOT_IN_REPOSITORY = "script not in this repository: read as HfArgumentParser would"
# TrainingArguments fields that many scripts of other kinds also take (a preprocessing or
# evaluation script's --output_dir --seed): alone they do not make a line a training run
_GENERIC_FIELDS = frozenset({"output_dir", "seed", "learning_rate", "max_steps", "num_train_epochs",
                             "local_rank", "debug", "run_name", "max_length", "beta", "packing",
                             "weight_decay", "data_seed", "dataset_text_field", "max_seq_length",
                             "push_to_hub", "hub_model_id", "resume_from_checkpoint", "use_cpu"})


def _is_field(class_name: str, key: str) -> bool:
    from trainlint.knowledge import training_args as ta

    try:
        return ta.history(class_name, key).known
    except ta.UnknownClassError:
        return False


def assumed_site(site: ArgsSite, note: str, certain: bool) -> ArgsSite:
    """``site`` with only the fields the class has had (the other keys belong to the
    dataclasses of a parser that cannot be seen), open-ended, and marked as assumed."""
    values = {k: v for k, v in site.values.items() if _is_field(site.class_name, k)}
    return replace(site, values=values, open_ended=True, assumed=note, assumed_certain=certain)


def assumed_flag_site(launch: LaunchCommand, class_name: str, note: str, certain: bool) -> ArgsSite | None:
    """The launch line's flags read as ``HfArgumentParser(class_name)`` would, for a script
    trainlint cannot read; None unless the flags look like a training run (two fields, one
    of them not a name every kind of script takes), when the parser is only a guess."""
    site = assumed_site(flag_site(launch, class_name), note, certain)
    if not certain and (len(site.values) < 2 or set(site.values) <= _GENERIC_FIELDS):
        return None
    return site


def _launch_flag(launch: LaunchCommand, names: list[str]) -> Flag | None:
    for n in reversed(names):
        if n.startswith("--") or (n.startswith("-") and len(n) > 2):
            f = launch.flag(n)
            if f is not None:
                return f
    return None


def override_sites(pf: PythonFile, launch: LaunchCommand | None) -> list[ArgsSite]:
    """The script's TrainingArguments sites, with ``args.X`` values replaced by the launch
    line's flags where the line sets them (the site objects are copied only then)."""
    if launch is None:
        return list(pf.sites)
    out = []
    for site in pf.sites:
        if site.call is None:
            out.append(site)
            continue
        cs = site.call.site
        new_values = None
        for kw in cs.node.keywords:
            if not kw.arg:
                continue
            opt = pf.cli_option(kw.value, cs.scope) or pf.dataclass_option(kw.value, cs.scope)
            if opt is None:
                continue
            f = _launch_flag(launch, opt.names)
            if f is None:
                continue
            if new_values is None:
                new_values = dict(site.values)
            v = flag_value(f, kw.arg)
            if opt.action in ("store_true", "store_false"):
                v = replace(v, value=opt.action == "store_true")
            # the flag is the script's own option: a rename would not be understood by argparse
            new_values[kw.arg] = replace(v, key_span=None, key_text="")
        out.append(site if new_values is None else replace(site, values=new_values))
    return out


# -- building setups -------------------------------------------------------------------------


class _Linker:
    def __init__(self, ws: Workspace, settings: Settings) -> None:
        self.ws = ws
        self.settings = settings
        self.linked: set[str] = set()
        self.launched_scripts: set[str] = set()
        self.project_files: dict[str, Any] = {}  # args-looking files the project's own code reads
        # by id of a script (kept alive here): whether its text names parse_yaml_file/parse_json_file
        self._names_file_method: dict[int, tuple[Any, bool]] = {}

    # the DeepSpeed config named by a site value (python literal/default, flag, args-file key)
    def _ds_from_value(self, setup: Setup, v: Value | None, base_file: str,
                       launch: LaunchCommand | None = None, doc: Any = None) -> bool:
        if v is None or not isinstance(v.value, str) or not v.value.strip():
            return False
        if v.value.strip().startswith("{"):
            return False  # a JSON string: inline config
        from trainlint.knowledge.wrappers import deepspeed_preset

        if "/" not in v.value and not v.value.endswith(".json") and deepspeed_preset(v.value) is not None:
            return True  # a framework's preset name (ms-swift's --deepspeed zero2), not a file
        span = v.span or v.key_span
        on_line = launch if launch is not None and base_file == launch.path else None
        pf = load_referenced(self.ws, base_file, v.value, span, "DeepSpeed config", on_line,
                             doc if on_line is not None else None)
        cfg = as_deepspeed(pf)
        if cfg is None:
            return pf is None and span is not None  # missing: reported; stop looking
        setup.extra["deepspeed"] = cfg
        setup.extra["deepspeed_ref"] = v
        self._add_file(setup, cfg.path)
        return True

    def _add_file(self, setup: Setup, path: str) -> None:
        if path not in setup.files:
            setup.files.append(path)
        self.linked.add(path)

    def _link_deepspeed(self, setup: Setup, candidates: list[tuple[Value | None, str]],
                        launch: LaunchCommand | None = None, doc: Any = None) -> None:
        for v, base in candidates:
            if self._ds_from_value(setup, v, base, launch, doc):
                return

    def _link_accelerate_ds(self, setup: Setup) -> None:
        acc = setup.extra.get("accelerate")
        if acc is None:
            return
        ref = acc.deepspeed_config_file
        if ref is None or "deepspeed" in setup.extra:
            return
        self._ds_from_value(setup, ref, acc.path)

    def launch_setup(self, pf_shell: ParsedFile, launch: LaunchCommand, index: int) -> Setup | None:
        from trainlint.knowledge import frameworks
        from trainlint.sources.python import PythonFile

        ws = self.ws
        doc = pf_shell.doc
        setup = Setup(root=Path(pf_shell.path).parent, files=[pf_shell.path])
        setup.extra["launch"] = launch
        setup.extra["launch_file"] = pf_shell.path
        setup.extra["site_refs"] = {}
        script_pf: PythonFile | None = None
        unseen: list[ArgsSite] = []  # sites read as a parser that is not in the repository would
        if launch.cli is not None:
            fw = frameworks.cli(launch.launcher, launch.cli)
            if fw is None:
                return None  # trl env, llamafactory-cli webui ...: not a training run
            unseen = self._cli_sites(setup, launch, fw, doc)
        elif launch.script is not None:
            name, span = launch.script
            if os.path.basename(name) == "setup.py":
                return None  # python setup.py install: a build, not a training run
            if not name.endswith(".py"):
                if launch.launcher == "python":
                    return None
            else:
                nb = _notebook_of(ws, pf_shell.path)
                if nb is not None:  # its %%writefile files, its folder, quiet after downloads
                    sf = load_referenced(ws, pf_shell.path, name, span, "script", launch, doc)
                    loc = Located(FOUND if sf is not None else UNRESOLVED)
                else:
                    loc = locate(ws, pf_shell.path, name, launch, doc)
                    sf = self._read_located(loc)
                if sf is not None and isinstance(sf.doc, PythonFile):
                    script_pf = sf.doc
                    setup.scripts.append(script_pf)
                    self._add_file(setup, sf.path)
                    self.launched_scripts.add(sf.path)
                elif sf is None:
                    unseen = self._unseen_script_sites(setup, launch, name, loc, span, doc)
        elif launch.module is not None:
            sf, loc, shown = self._module(launch, pf_shell.path, doc)
            if sf is not None and isinstance(sf.doc, PythonFile):
                script_pf = sf.doc
                setup.scripts.append(script_pf)
                self._add_file(setup, sf.path)
                self.launched_scripts.add(sf.path)
            elif sf is None:
                unseen = self._unseen_script_sites(setup, launch, shown, loc, launch.launcher_span, doc,
                                                   module=launch.module)
        else:
            return None
        self.linked.add(pf_shell.path)
        # accelerate config
        if launch.launcher == "accelerate":
            cf = launch.config_file
            if cf is not None and cf.value:
                apf = load_referenced(ws, pf_shell.path, cf.value, cf.value_span or cf.name_span,
                                      "accelerate config", launch, doc)
                acc = as_accelerate(apf)
                if acc is not None:
                    setup.extra["accelerate"] = acc
                    setup.extra["accelerate_ref"] = flag_value(cf)
                    self._add_file(setup, acc.path)
        # TrainingArguments sites
        ds_candidates: list[tuple[Value | None, str]] = []
        if script_pf is not None:
            from trainlint.consumers import main_parser

            annotate_python_sites(script_pf)
            sites = override_sites(script_pf, launch)
            parser = main_parser(script_pf)
            if parser is not None:
                sites.extend(self._parser_sites(setup, launch, script_pf, parser, pf_shell.path, index))
            else:
                self._note_project_files(launch, script_pf)
            setup.sites = sites
        else:
            setup.sites = unseen
            for site in unseen:
                if site.path == pf_shell.path and site.span == launch.span:
                    setup.extra["site_refs"][id(site)] = ("launch", pf_shell.path, index)
        for s in setup.sites:
            v = s.get("deepspeed")
            if v is not None:
                ds_candidates.append((v, s.path if v.origin in (PYTHON, ARGSFILE) else pf_shell.path))
        if not ds_candidates:
            for flag_name in ("deepspeed", "deepspeed_config"):  # the latter: deepspeed.add_config_arguments
                f = launch.flag(flag_name)
                if f is not None:
                    ds_candidates.append((flag_value(f), pf_shell.path))
        if script_pf is not None:
            ds_candidates.extend(_initialize_configs(script_pf))
        self._link_deepspeed(setup, ds_candidates, launch, doc)
        self._link_accelerate_ds(setup)
        # world size
        world = launch.world_size_value()
        if launch.launcher == "python":
            world = None  # one process; how many GPUs it sees is --gpus (P23)
        acc = setup.extra.get("accelerate")
        if world is None and acc is not None and launch.launcher == "accelerate":
            world = accelerate_world_size(acc)
        setup.world_size = world
        return setup

    def _read_located(self, loc: Located) -> ParsedFile | None:
        from trainlint.workspace import read_file

        if loc.verdict != FOUND or loc.path is None:
            return None
        if loc.path in self.ws.files:
            return self.ws.files[loc.path]
        if os.path.isdir(loc.path):
            return None
        return read_file(self.ws, loc.path, explicit=True)

    def _module(self, launch: LaunchCommand, base: str, doc: Any) -> tuple[ParsedFile | None, Located, str]:
        """``python -m pkg.train``: ``pkg/train.py`` or ``pkg/train/__main__.py`` (also under
        ``src/``), found like a script path."""
        module = launch.module or ""
        rel = module.replace(".", "/")
        tried: Located | None = None
        for cand in (f"{rel}.py", f"{rel}/__main__.py", f"src/{rel}.py", f"src/{rel}/__main__.py"):
            # only the first candidate's verdict is shown when none is there: the others are
            # only looked for (their verdicts, a listing of their folders each, were dropped)
            loc = locate(self.ws, base, cand, launch, doc, verdict=tried is None)
            if loc.verdict == FOUND:
                return self._read_located(loc), loc, cand
            tried = tried or loc
        assert tried is not None
        top = module.split(".", 1)[0]
        package = any(locate(self.ws, base, d, launch, doc, verdict=False).verdict == FOUND
                      for d in (top, f"src/{top}"))
        if package:  # the package is here: the module should be
            return None, Located(MISSING, folders=tried.folders, severity=Severity.ERROR,
                                 why=f"the package {top!r} is in this repository, but not this module"), f"{rel}.py"
        return None, Located(ELSEWHERE, folders=tried.folders, severity=Severity.INFO,
                             why=f"no package {top!r} here: an installed package"), f"{rel}.py"

    def _unseen_script_sites(self, setup: Setup, launch: LaunchCommand, name: str, loc: Located, span,
                             doc: Any, module: str | None = None) -> list[ArgsSite]:
        """The launch line of a script that is not in the repository: its flags read as
        HfArgumentParser(TrainingArguments) would (``python run.py args.json``: that file),
        and the missing script reported at the severity its likelihood deserves."""
        from trainlint.knowledge import frameworks

        class_name = frameworks.example_class(name)
        if any(f.key in ("predict_with_generate", "generation_max_length", "generation_num_beams",
                         "sortish_sampler") for f in launch.script_args):
            class_name = "Seq2SeqTrainingArguments"
        certain = frameworks.looks_like_hf_example(name) or (
            launch.cwd is not None and frameworks.looks_like_hf_example(launch.cwd + "/"))
        note = NOT_IN_REPOSITORY if module is None else \
            f"module {module} not in this repository: read as HfArgumentParser would"
        sites: list[ArgsSite] = []
        fs = assumed_flag_site(launch, class_name, note, certain)
        args_file = None
        if not launch.script_args and len(launch.positionals) == 1 \
                and launch.positionals[0][0].endswith(ARGS_FILE_SUFFIXES):
            args_file = self._args_file_site(setup, launch, class_name)
            if args_file is not None:
                sites.append(assumed_site(args_file, note, certain))
        elif fs is not None:
            sites.append(fs)
        cfg = launch.flag("config")
        if cfg is not None and isinstance(cfg.value, str) and cfg.value.endswith((".yaml", ".yml", ".json")):
            site = self._config_site(setup, launch, cfg, class_name, doc, only_args_files=True,
                                     note="script not in this repository: --config read as TrlParser would",
                                     certain=False)
            if site is not None:
                sites.append(site)
        then = ""
        if sites:
            then = f"its {'args file' if args_file is not None else 'flags'} are read as " \
                   f"HfArgumentParser({class_name}) would read them"
        if module is not None and loc.verdict == ELSEWHERE and not sites:
            return sites  # python -m pip, -m venv ...: an installed tool, not a training run
        if loc.verdict in (MISSING, ELSEWHERE) and span is not None:
            _missing(self.ws, module or name, span, "module" if module else "script", loc.folders,
                     loc.severity, loc.why, then, looked_for=name if module else "")
        return sites

    def _config_site(self, setup: Setup, launch: LaunchCommand, flag: Flag, class_name: str, doc: Any,
                     note: str, certain: bool, only_args_files: bool = False) -> ArgsSite | None:
        """``--config recipe.yaml`` (TrlParser): the file's keys as the class's values."""
        value = flag.value or ""
        if only_args_files:
            loc = locate(self.ws, launch.path, value, launch, doc)
            pf = self._read_located(loc)
            if pf is None or pf.kind != "hf_args":
                return None
        else:
            pf = load_referenced(self.ws, launch.path, value, flag.value_span or flag.name_span,
                                 "config file", launch, doc)
        af = as_argsfile(pf)
        if af is None:
            return None
        setup.extra["args_file"] = af
        self._add_file(setup, af.path)
        site = assumed_site(af.as_site(class_name), note, certain)
        setup.extra["site_refs"][id(site)] = ("argsfile", af.path, 0)
        return site

    def _cli_sites(self, setup: Setup, launch: LaunchCommand, fw, doc: Any) -> list[ArgsSite]:
        """``trl sft --config x.yaml --flags``, ``llamafactory-cli train x.yaml key=value``:
        the args file and the flags as the framework's parser reads them."""
        note = f"{fw.name}: read as its {fw.parser}({fw.class_name}) would"
        sites: list[ArgsSite] = []
        if fw.config_flag is not None:
            cfg = launch.flag(fw.config_flag)
            if cfg is not None and cfg.value:
                site = self._config_site(setup, launch, cfg, fw.class_name, doc, note, True)
                if site is not None:
                    sites.append(site)
        if fw.args_file_positional and launch.positionals:
            text, span = launch.positionals[0]
            if text.endswith(ARGS_FILE_SUFFIXES):
                apf = load_referenced(self.ws, launch.path, text, span, "args file", launch, doc)
                af = as_argsfile(apf)
                if af is not None:
                    setup.extra["args_file"] = af
                    self._add_file(setup, af.path)
                    base = af.as_site(fw.class_name)
                    overrides = _key_value_overrides(launch.positionals[1:])
                    if overrides:
                        base = replace(base, values={**base.values, **overrides})
                    site = assumed_site(base, note, True)
                    setup.extra["site_refs"][id(site)] = ("argsfile", af.path, 0)
                    sites.append(site)
        flags = assumed_flag_site(launch, fw.class_name, note, True)
        if flags is not None and flags.values:
            sites.append(flags)
        if fw.redeclared:  # the framework's own subclass takes these: not ours to judge
            sites = [replace(s, values={k: v for k, v in s.values.items() if k not in fw.redeclared})
                     for s in sites]
            for s in sites:
                setup.extra["site_refs"][id(s)] = ("argsfile", s.path, 0)
        return sites

    def _parser_sites(self, setup: Setup, launch: LaunchCommand, pf: PythonFile, parser, shell_path: str,
                      index: int) -> list[ArgsSite]:
        """The sites an ``HfArgumentParser``/``TrlParser`` script reads from this launch line:
        the args file given as the only argument (``parse_yaml_file(sys.argv[1])``), the
        ``--config`` YAML of ``TrlParser.parse_args_and_config()``, and the flags."""
        import os

        from trainlint.knowledge.wrappers import trl_parser_config_flag

        script = os.path.basename(pf.path)
        out: list[ArgsSite] = []
        own = frozenset(_local_dataclass_fields(pf, parser))
        # ``python run.py args.yaml``: read only by a script that parses files from its command
        # line (``parse_yaml_file(sys.argv[1])``); TrlParser takes a YAML only after --config
        positional = None
        unseen = not (parser.reads_argv or parser.file_kinds or parser.reads_dict)  # how it parses is not visible
        if (parser.argv_file and parser.file_kinds) or unseen:
            kinds = None if unseen else ({"yaml", "json"} if "yaml" in parser.file_kinds else set(parser.file_kinds))
            via = f"{parser.kind} in {script} (assumed to read the file given as its only argument)" if unseen \
                else f"{parser.kind}.{_file_method(parser)} in {script}"
            positional = self._args_file_site(setup, launch, parser.class_name, parser.consumer(pf, via, own),
                                              kinds=kinds)
        if positional is not None:
            return [positional]
        skip: tuple[str, ...] = ()
        if parser.reads_config:
            flag_name = trl_parser_config_flag().lstrip("-")
            skip = (flag_name,)
            cfg = launch.flag(flag_name)
            if cfg is not None and cfg.value and not cfg.unresolved:
                consumer = parser.consumer(pf, f"TrlParser {trl_parser_config_flag()} in {script}",
                                           own | _reserved_trl_keys())
                site = self._args_file_from(setup, launch.path, cfg.value, cfg.value_span or cfg.name_span,
                                            parser.class_name, consumer)
                if site is not None:
                    # one run: the YAML sets the parser's defaults, the flags override them
                    flags = flag_site(launch, parser.class_name, consumer, skip=skip)
                    site.values.update(flags.values)
                    site.open_ended = site.open_ended or flags.open_ended
                    return [site]
        if not parser.reads_argv and (parser.file_kinds or parser.reads_dict):
            # the parser reads only files or dicts (Firefly: argparse takes --train_args_file,
            # then HfArgumentParser.parse_json_file reads it): the flags are the script's own
            # argparse's, not TrainingArguments; an args file a flag names is what it reads
            suffixes = tuple(s for k in parser.file_kinds for s in ((".json",) if k == "json" else (".yaml", ".yml")))
            for f in launch.script_args:
                if f.unresolved or not isinstance(f.value, str) or not f.value.endswith(suffixes):
                    continue
                consumer = parser.consumer(pf, f"{parser.kind}.{_file_method(parser)} in {script} (the file "
                                               f"{f.prefix}{f.name} names)", own)
                site = self._args_file_from(setup, launch.path, f.value, f.value_span or f.name_span,
                                            parser.class_name, consumer)
                if site is not None:
                    out.append(site)
            return out
        fs = flag_site(launch, parser.class_name, parser.consumer(pf, f"{parser.kind} in {script}", own), skip=skip)
        setup.extra["site_refs"][id(fs)] = ("launch", shell_path, index)
        out.append(fs)
        return out

    def _note_project_files(self, launch: LaunchCommand, pf: PythonFile) -> None:
        """Args-looking files given to a script without a Hugging Face parser are read by the
        project's own code (its argparse, ``yaml.safe_load``...), not as TrainingArguments."""
        import os

        from trainlint.consumers import project_readers
        from trainlint.workspace import norm

        readers = project_readers(pf)
        via = f"{readers[0]} in {os.path.basename(pf.path)}" if readers else f"{os.path.basename(pf.path)}'s own code"
        refs = [t for t, _ in launch.positionals] + [f.value for f in launch.script_args if f.value]
        for text in refs:
            if not isinstance(text, str) or not text.endswith(ARGS_FILE_SUFFIXES) or "$" in text:
                continue
            for folder in _reference_folders(launch.path):
                cand = norm(os.path.join(folder, text))
                if cand in self.ws.files:
                    self.project_files.setdefault(cand, project_consumer(via=via))
                    break

    def _args_file_site(self, setup: Setup, launch: LaunchCommand, class_name: str, consumer=None,
                        kinds: set[str] | None = None) -> ArgsSite | None:
        """``python run.py args.json``: the only argument is an args file (of a kind the
        script's parser reads, when ``kinds`` says)."""
        if launch.script_args or len(launch.positionals) != 1:
            return None
        text, span = launch.positionals[0]
        if not text.endswith(ARGS_FILE_SUFFIXES):
            return None
        if kinds is not None and ("json" if text.endswith(".json") else "yaml") not in kinds:
            return None
        doc = self.ws.files[launch.path].doc if launch.path in self.ws.files else None
        return self._args_file_from(setup, launch.path, text, span, class_name, consumer, launch, doc)

    def _args_file_from(self, setup: Setup, base: str, text: str, span, class_name: str, consumer,
                        launch: LaunchCommand | None = None, doc: Any = None) -> ArgsSite | None:
        apf = load_referenced(self.ws, base, text, span, "args file", launch, doc)
        af = as_argsfile(apf)
        if af is None:
            return None
        setup.extra["args_file"] = af
        self._add_file(setup, af.path)
        site = af.as_site(class_name)
        site.consumer = consumer
        setup.extra.setdefault("site_refs", {})[id(site)] = ("argsfile", af.path, 0)
        return site

    def script_setup(self, pf: PythonFile) -> Setup:
        annotate_python_sites(pf)
        setup = Setup(root=Path(pf.path).parent, scripts=[pf], sites=list(pf.sites), files=[pf.path])
        self._link_deepspeed(setup, [(s.get("deepspeed"), pf.path) for s in pf.sites] + _initialize_configs(pf))
        return setup

    def argsfile_setup(self, f: ParsedFile, class_name: str) -> Setup | None:
        af = as_argsfile(f)
        if af is None:
            return None
        site = af.as_site(class_name)
        site.consumer = self.standalone_consumer(f.path, class_name)
        if not site.consumer.judged and f.explicit and site.consumer.kind != "project":
            # named on the command line: judged, saying what is assumed
            method = "parse_json_file" if f.path.endswith(".json") else "parse_yaml_file"
            site.consumer = library_consumer(class_name, via=f"HfArgumentParser.{method} (assumed: the file was "
                                                             f"named on the command line and nothing in the "
                                                             f"repository says who reads it)")
        setup = Setup(root=Path(f.path).parent, sites=[site], files=[f.path])
        setup.extra["args_file"] = af
        setup.extra["args_readers"] = same_folder_args_readers(self.ws, f.path)
        setup.extra["site_refs"] = {id(site): ("argsfile", af.path, 0)}
        self._link_deepspeed(setup, [(site.get("deepspeed"), f.path)])
        return setup

    def standalone_consumer(self, path: str, class_name: str):
        """Who reads an args file that no launch line names: a script beside it (or in the
        folder above) that parses ``sys.argv[1]`` with ``parse_yaml_file``/``parse_json_file``
        (a Hugging Face reader); else the project's own code when it reads such files
        (``yaml.safe_load``...); else nobody known. Only the first is judged."""
        import os

        from trainlint.consumers import _FILE_METHODS, main_parser, project_readers

        if path in self.project_files:
            return self.project_files[path]
        from trainlint.workspace import norm

        kind = "json" if path.endswith(".json") else "yaml"
        folder = os.path.dirname(path)
        near = {folder, os.path.dirname(folder)}
        readers: list[str] = []
        # a parser reads a file only through ``parse_yaml_file``/``parse_json_file`` (its
        # ``literal_files``, ``file_kinds`` and ``argv_file`` come from those calls alone): a
        # script whose text names neither is not asked (its calls are not walked)
        known = self._names_file_method
        python_files = self.ws.python_files
        for pf in python_files:
            if id(pf) not in known:
                known[id(pf)] = (pf, any(m in pf.text for m in _FILE_METHODS))
        files = [pf for pf in python_files if known[id(pf)][1]]
        for pf in files:  # parse_yaml_file("args.yaml") names it
            use = main_parser(pf)
            for text, _node in use.literal_files if use is not None else ():
                if any(norm(os.path.join(f, text)) == path for f in _reference_folders(pf.path)):
                    method = "parse_json_file" if text.endswith(".json") else "parse_yaml_file"
                    return use.consumer(pf, f"{method}({text!r}) in {os.path.basename(pf.path)}",
                                        frozenset(_local_dataclass_fields(pf, use)))
        for pf in python_files:
            if os.path.dirname(pf.path) not in near:
                continue
            use = main_parser(pf) if known[id(pf)][1] else None
            if use is not None and kind in use.file_kinds and use.argv_file:
                method = "parse_json_file" if kind == "json" else "parse_yaml_file"
                return use.consumer(pf, f"{method}(sys.argv[1]) in {os.path.basename(pf.path)} (beside it)",
                                    frozenset(_local_dataclass_fields(pf, use)))
            readers.extend(f"{r} in {os.path.basename(pf.path)}" for r in project_readers(pf)[:1])
        if readers:
            return project_consumer(via=readers[0])
        return unknown_consumer("no launch line, README command or parser in the repository reads it")

    def accelerate_setup(self, f: ParsedFile) -> Setup | None:
        acc = as_accelerate(f)
        if acc is None:
            return None
        setup = Setup(root=Path(f.path).parent, files=[f.path])
        setup.extra["accelerate"] = acc
        self._link_accelerate_ds(setup)
        setup.world_size = accelerate_world_size(acc)
        return setup

    def deepspeed_setup(self, f: ParsedFile) -> Setup | None:
        cfg = as_deepspeed(f)
        if cfg is None:
            return None
        setup = Setup(root=Path(f.path).parent, files=[f.path])
        setup.extra["deepspeed"] = cfg
        return setup


def _key_value_overrides(positionals: list[tuple[str, Any]]) -> dict[str, Value]:
    """``key=value`` words after an args file (OmegaConf.from_cli): values that win over the
    file's (never edited: a fix goes to the file)."""
    from trainlint.sources.shell import Flag

    out: dict[str, Value] = {}
    for text, span in positionals:
        key, eq, val = text.partition("=")
        if not eq or not key.isidentifier():
            continue
        f = Flag(name=key, value=val, name_span=span, value_span=span, raw=text)
        out[key] = replace(flag_value(f), key_span=None, key_text="", span=span)
    return out


def _file_method(parser) -> str:
    kinds = sorted(parser.file_kinds)
    return "/".join(f"parse_{k}_file" for k in kinds) or "parse_args_into_dataclasses"


def _reserved_trl_keys() -> frozenset[str]:
    from trainlint.knowledge.wrappers import trl_parser_reserved_keys

    return trl_parser_reserved_keys()


def _local_dataclass_fields(pf: PythonFile, parser) -> set[str]:
    """The annotated fields of the file's own dataclasses the parser reads (and their local
    bases)."""
    out: set[str] = set()
    todo = [(pf, name) for name in parser.local_classes]
    seen: set[tuple[str, str]] = set()
    while todo:
        owner, name = todo.pop()
        found = owner.class_def(name)
        if found is None or (found[0].path, name) in seen:
            continue
        seen.add((found[0].path, name))
        owner, cd = found
        for stmt in cd.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                out.add(stmt.target.id)
        todo.extend((owner, b.id) for b in cd.bases if isinstance(b, ast.Name))
    return out


def _initialize_configs(pf: PythonFile) -> list[tuple[Value | None, str]]:
    """``deepspeed.initialize(..., config="ds.json")`` (or ``config_params=``) with a path."""
    out: list[tuple[Value | None, str]] = []
    if "initialize" not in pf.text or "deepspeed" not in pf.text:  # no such call (and no walk of the file)
        return out
    # such a call is written ``<expr>.initialize(...)`` or ``<name>(...)`` for a name imported as
    # deepspeed.initialize: a file whose text has no such call is not walked (TRL's modules name
    # DeepSpeed and initialize in many other ways)
    aliases = [local for local, qualified in pf.imports.items() if qualified == "deepspeed.initialize"]
    for cs in pf.calls_named("initialize", *aliases):
        if pf.qualname(cs.node.func) != "deepspeed.initialize":
            continue
        for name in ("config", "config_params"):
            kw = pf.keyword(cs.node, name)
            if kw is None:
                continue
            val = pf.resolve(kw.value, cs.scope).value
            if isinstance(val, str) and val.endswith(".json"):
                out.append((Value(value=val, origin=PYTHON, span=pf.span(kw.value), name=name), pf.path))
    return out


def accelerate_world_size(acc) -> Value | None:
    """``num_processes`` of an accelerate config, else the number of ``gpu_ids``."""
    v = acc.num_processes
    if v is not None and isinstance(v.value, int) and not isinstance(v.value, bool) and v.value > 0:
        return v
    ids = acc.gpu_id_list()
    if ids:
        g = acc.gpu_ids
        return Value(value=len(ids), origin=ACCELERATE, span=g.span, key_span=g.key_span, name="gpu_ids")
    return None


# What in a Python file makes linking look at the args files beside it (the two functions below);
# ``partition`` keeps such a file with the rest of the run when its folder holds one.
SAME_FOLDER_NAMES = ("HfArgumentParser", "TrlParser", "parse_yaml_file", "parse_json_file")


def same_folder_args_readers(ws: Workspace, path: str) -> frozenset[str]:
    """How the Python files beside a stand-alone args file read such files:
    ``"parse_yaml_file"`` / ``"parse_json_file"`` (HfArgumentParser, values reach the dataclass
    as the file has them) and ``"TrlParser"`` (values become argparse defaults)."""
    folder = os.path.dirname(path)
    found: set[str] = set()
    for f in ws.files.values():
        if f.kind == "python" and f.doc is not None and os.path.dirname(f.path) == folder:
            text = f.doc.text
            found.update(name for name in ("parse_yaml_file", "parse_json_file", "TrlParser") if name in text)
    return frozenset(found)


def _same_folder_hf_class(ws: Workspace, path: str) -> str | None:
    folder = os.path.dirname(path)
    found = set()
    for f in ws.files.values():
        if f.kind == "python" and f.doc is not None and os.path.dirname(f.path) == folder:
            c = hf_parser_class(f.doc)
            if c is not None:
                found.add(c)
    return found.pop() if len(found) == 1 else None


def _with_imports(setup: Setup, ws: Workspace, uses: dict[str, list[str]]) -> Setup:
    """A setup whose scripts use definitions of other repository modules (an imported
    ``training_args``, a Trainer subclass, a parsed dataclass) holds those files too, and the
    imported TrainingArguments sites its Trainers receive."""
    for pf in list(setup.scripts):
        for path in uses.get(pf.path, ()):
            f = ws.files.get(path)
            if path not in setup.files:
                setup.files.append(path)
            if f is not None and f.doc is not None and f.doc not in setup.scripts and f.kind == "python":
                setup.scripts.append(f.doc)
        for tc in pf.trainer_calls:
            tac = tc.args_call
            if tac is not None and tac.args.path != pf.path and tac.args not in setup.all_sites:
                annotate_python_sites(next((s for s in setup.scripts if s.path == tac.args.path), pf))
                setup.all_sites.append(tac.args)
    return setup


def link_setups(ws: Workspace, settings: Settings) -> list[Setup]:
    from trainlint.folders import kept

    with kept():  # the folders a path may start from, looked up once per folder (``trainlint.folders``)
        return _link_setups(ws, settings)


def _link_setups(ws: Workspace, settings: Settings) -> list[Setup]:
    from trainlint.modules import link_modules

    uses = link_modules(ws)
    # modules whose TrainingArguments objects a script of the run imports: judged there, with
    # the Trainer that receives them, not on their own
    consumed = {tc.args_call.args.path for f in ws.files.values() if f.kind == "python" and f.doc is not None
                for tc in f.doc.trainer_calls
                if tc.args_call is not None and tc.args_call.args.path != f.path}
    linker = _Linker(ws, settings)
    setups: list[Setup] = []
    files = _linkable(ws)
    for f in files:
        if f.kind in ("shell", "markdown", "notebook") and f.doc is not None:
            for i, launch in enumerate(f.doc.launches):
                s = linker.launch_setup(f, launch, i)
                if s is not None:
                    setups.append(_with_imports(s, ws, uses))
    for f in files:
        if f.kind == "python" and f.doc is not None and f.path not in linker.launched_scripts:
            if f.path in consumed and not f.doc.trainer_calls:
                continue
            setups.append(_with_imports(linker.script_setup(f.doc), ws, uses))
    for f in files:
        if f.kind == "hf_args" and f.path not in linker.linked:
            s = linker.argsfile_setup(f, _same_folder_hf_class(ws, f.path) or "TrainingArguments")
            if s is not None:
                setups.append(s)
    for f in files:
        if f.kind == "accelerate" and f.path not in linker.linked:
            s = linker.accelerate_setup(f)
            if s is not None:
                setups.append(s)
    for f in files:
        if f.kind == "deepspeed" and f.path not in linker.linked:
            s = linker.deepspeed_setup(f)
            if s is not None:
                setups.append(s)
    return setups


# -- the same site at another git revision (lr-not-scaled) ----------------------------------------


def site_at_revision(setup: Setup, site: ArgsSite, rev: str) -> tuple[ArgsSite, int | None] | None:
    """The site as it was at git revision ``rev`` (a launch line's flags or an args file), and
    the world size of that launch line; None when unknown or unchanged."""
    ref = setup.extra.get("site_refs", {}).get(id(site))
    if ref is None:
        return None
    kind, path, index = ref
    from trainlint.vcs import read_at_revision

    text = read_at_revision(path, rev)
    if text is None:
        return None
    try:
        if kind == "launch":
            from trainlint.sources.shell import markdown_launches, parse_shell

            if path.endswith(".ipynb"):
                from trainlint.sources.notebook import read_notebook

                launches = read_notebook(path, text).launches
            else:
                launches = markdown_launches(text, path) if path.endswith((".md", ".markdown", ".mdx")) \
                    else parse_shell(text, path).launches
            if index >= len(launches):
                return None
            base_launch = launches[index]
            world = base_launch.world_size() if base_launch.launcher != "python" else None
            return flag_site(base_launch, site.class_name), world
        from trainlint.sources.argsfile import ArgsFile

        return ArgsFile.parse(text, path).as_site(site.class_name), None
    except Exception:  # noqa: BLE001 - an old revision that does not parse has no reference
        return None


def diagnostic_for(code: str, name: str, severity: Severity, span, message: str) -> Diagnostic:
    return Diagnostic(code=code, name=name, severity=severity, message=message, path=span.path,
                      line=span.line, column=span.column, end_line=span.end_line, end_column=span.end_column)
