"""Which transformers / TRL version a check targets, found without importing anything.

Order (the first that gives a version wins):

1. the explicit value: ``--transformers-version`` / ``--trl-version``, or
   ``[tool.trainlint] transformers-version`` / ``trl-version`` (passed in as ``explicit``;
   when it is not passed and ``project_root`` has a pyproject.toml with that key, it is read
   from there);
2. what the checked project declares (:func:`declared_requirement`): ``requirement*.txt``
   and ``requirements/*.txt`` at the project root (following ``-r``/``-c`` includes),
   ``pyproject.toml`` (``[project] dependencies``, ``[project.optional-dependencies]``,
   ``[dependency-groups]``, ``[tool.poetry.dependencies]`` and its groups), ``setup.py``
   (``install_requires`` / ``extras_require`` lists written as literals), ``setup.cfg``
   (``[options] install_requires``, ``[options.extras_require]``), ``environment.yml``
   (conda and ``pip:`` entries) and ``pip install`` lines of a ``Dockerfile``. The installed
   distribution's version is used when it satisfies the declared range (source
   ``"installed, within requirements.txt:3"``); otherwise the newest known version inside
   the range;
3. the installed distribution's version from package metadata (the package itself is never
   imported);
4. the newest version the data knows.

How a requirement becomes one version: the newest known version (from the generated data)
that satisfies the whole specifier set, which is what ``pip install`` would pick today as far
as the data knows. So ``transformers==4.46.0`` gives 4.46.0, ``transformers>=4.40,<5`` gives
the newest known 4.x, ``~=4.46.0`` the newest known 4.46.x, ``>=4.40`` the newest known. When
no known version satisfies it, an exact pin (``==X``) gives X, else the upper bound (``<=X``
gives X), else the lower bound. A requirement without any specifier is not a pin and is
skipped. Poetry's ``^``/``~`` constraints are translated to the equivalent ranges.

``source`` is a short human string: "--transformers-version", "pyproject.toml
[tool.trainlint]", "installed", "requirements.txt:3", "pyproject.toml:12", "newest known".
"""

from __future__ import annotations

import os
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from trainlint import reads
from trainlint.diagnostics import OLDER_THAN_DATA
from trainlint.knowledge import training_args
from trainlint.lazyre import lazy
from trainlint.record import Row

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.knowledge.pep440 import SpecifierSet

# ``packaging`` (~50 ms to import its requirement parser) is imported only when a project pin
# has to be read, never when the version is given or installed.

if sys.version_info >= (3, 11):  # pragma: no cover
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "ResolvedVersion",
    "declared_requirement",
    "find_project_root",
    "resolve_version",
    "resolve_transformers_version",
    "resolve_trl_version",
    "version_from_specifier",
    "find_pin",
]


class ResolvedVersion(Row):
    __slots__ = ()
    _fields = ("version", "source")
    version: str
    source: str

    def __new__(_cls, version: str, source: str) -> ResolvedVersion:
        return tuple.__new__(_cls, (version, source))


def resolve_transformers_version(
    explicit: str | None = None,
    project_root: Path | None = None,
    *,
    explicit_source: str = "--transformers-version",
    use_installed: bool = True,
) -> ResolvedVersion:
    """The transformers version to check against, and where it came from."""
    return _resolve(
        "transformers",
        "transformers-version",
        explicit,
        project_root,
        explicit_source,
        use_installed,
        training_args.known_versions,
    )


def resolve_trl_version(
    explicit: str | None = None,
    project_root: Path | None = None,
    *,
    explicit_source: str = "--trl-version",
    use_installed: bool = True,
) -> ResolvedVersion:
    """The TRL version to check against, and where it came from."""
    return _resolve(
        "trl",
        "trl-version",
        explicit,
        project_root,
        explicit_source,
        use_installed,
        training_args.trl_known_versions,
    )


def _resolve(
    package: str,
    config_key: str,
    explicit: str | None,
    project_root: Path | None,
    explicit_source: str,
    use_installed: bool,
    known_versions: Callable[[], list[str]],
) -> ResolvedVersion:
    """``known_versions`` is called only when a pin or the fallback needs the list (it reads
    the version data, which an installed package or an explicit version never needs)."""
    if explicit:
        return ResolvedVersion(str(explicit).strip(), explicit_source)
    root = Path(project_root) if project_root is not None else None
    if root is not None:
        configured = _tool_trainlint(root, config_key)
        if configured:
            return ResolvedVersion(configured, "pyproject.toml [tool.trainlint]")
    installed = installed_version(package) if use_installed else None
    if root is not None:
        declared = None
        for folder in declaration_folders(root):  # a sub-project's file that does not name it: the ones above
            declared = declared_requirement(package, folder)
            if declared is not None:
                if folder != root:
                    declared = (declared[0], f"{os.path.relpath(folder, root)}/{declared[1]}")
                break
        if declared is not None:
            spec, where = declared
            if installed and _satisfies(spec, installed):
                return ResolvedVersion(installed, f"installed, within {where}")
            v = version_from_specifier(spec, known_versions())
            if v is not None:
                return ResolvedVersion(v, where)
    if installed:
        return ResolvedVersion(installed, "installed")
    known = known_versions()
    return ResolvedVersion(known[-1] if known else "", "newest known")


def resolve_version(package: str, project_root: Path | None = None, *, use_installed: bool = True,
                    known: Callable[[], list[str]] | None = None) -> ResolvedVersion | None:
    """The target version of any package (peft, accelerate, deepspeed...): declared by the
    project (the installed one when it satisfies the range), else installed; None when
    neither says. ``known`` lists the versions the data knows (none for most packages: an
    exact pin or the range's bound is taken)."""
    rv = _resolve(package, package + "-version", None, project_root, "", use_installed, known or (lambda: []))
    return rv if rv.version else None


@lru_cache(maxsize=1)
def _trl_requires() -> dict[str, str]:
    import json

    path = Path(__file__).parent / "data" / "trl_requires.json"
    return json.loads(path.read_text(encoding="utf-8"))["transformers"]


@lru_cache(maxsize=None)
def _trl_requirement(trl: str):
    """The transformers range trl release ``trl`` requires (the data's text read as a
    ``SpecifierSet``; raises what reading it raises). Read once per release: each sub-project
    that pins transformers asks ``trl_for_transformers``, which tries every known release
    (peft: ~470 readings of ~60 texts)."""
    from trainlint.knowledge.pep440 import SpecifierSet

    return SpecifierSet(_trl_requires().get(trl, ""))


def trl_for_transformers(transformers: str, trl: str) -> ResolvedVersion | None:
    """For a project that pins transformers and does not declare trl: the trl release pip would
    install beside it when ``trl`` (installed, or the newest known) cannot be, with why; None
    when ``trl``'s own requirement admits that transformers (or either is not known). When no
    known trl release admits it, the oldest known, said to be an assumption (the project runs
    an older trl than the data knows)."""
    from trainlint.knowledge.pep440 import InvalidSpecifier, InvalidVersion, Version

    requires = _trl_requires()
    try:
        tf = Version(transformers)

        def admits(v: str) -> bool:
            return _trl_requirement(v).contains(tf, prereleases=True)

        current = training_args.trl_data_version_for(trl)
        if current not in requires or admits(current):
            return None
        fits = [v for v in requires if admits(v)]
    except (InvalidVersion, InvalidSpecifier, ValueError):
        return None
    why = f"trl is not declared, and trl {trl} requires transformers{requires[current]}"
    if fits:
        best = max(fits, key=Version)
        return ResolvedVersion(best, f"the newest trl whose requirement admits transformers {transformers} ({why})")
    oldest = min(requires, key=Version)
    return ResolvedVersion(oldest, f"{why}; every trl release from {oldest} on requires a newer transformers, so "
                                   f"the project runs an older trl ({OLDER_THAN_DATA}, which starts at {oldest}: "
                                   f"judged as {oldest})")


def known_releases(package: str) -> list[str]:
    """The releases of ``package`` trainlint's data files know (oldest first): a range the
    project declares (``deepspeed>=0.16``) then targets the newest of them it admits, as an
    install would. Empty for a package no data file covers."""
    if package == "deepspeed":
        from trainlint.knowledge import behaviour

        return behaviour.known_versions(package)
    from trainlint.knowledge import public_names

    try:
        return public_names.known_versions(package)
    except KeyError:
        return []


def _satisfies(spec: SpecifierSet, version: str) -> bool:
    from trainlint.knowledge.pep440 import InvalidVersion, Version

    try:
        return spec.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


_DIST = lazy(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._]*?)-(?P<version>[0-9][^-]*?)\.(dist-info|egg-info)$")


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def installed_version(package: str) -> str | None:
    """The version of the distribution ``package`` installed on ``sys.path``, read from its
    ``<name>-<version>.dist-info`` folder name (what ``importlib.metadata`` would find first),
    without importing the package or ``importlib.metadata`` (~30 ms on this machine)."""
    return _installed().get(_normalize(package))


@lru_cache(maxsize=1)
def _installed() -> dict[str, str]:
    """Normalized distribution name -> version, the first found along ``sys.path`` (one
    directory listing per entry, shared by every package asked about)."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for n in names:
            if not n.endswith("-info"):
                continue
            parts = _dist_parts(n)
            if parts is not None:
                found.setdefault(_normalize(parts[0]), parts[1])
    return found


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._")


def _dist_parts(n: str) -> tuple[str, str] | None:
    """(name, version) of a ``<name>-<version>.dist-info`` / ``.egg-info`` folder name, as
    ``_DIST.match`` reads it (neither part holds a ``-``), without compiling the pattern for
    the usual names (printable ASCII)."""
    if not (n.isascii() and n.isprintable()):
        m = _DIST.match(n)
        return (m.group("name"), m.group("version")) if m else None
    for suffix in (".dist-info", ".egg-info"):
        if n.endswith(suffix):
            stem = n[: -len(suffix)]
            break
    else:
        return None
    name, dash, version = stem.partition("-")
    if not dash or "-" in version or not name or not version:
        return None
    if not (name[0].isalnum() and version[0].isdigit()) or not _NAME_CHARS.issuperset(name):
        return None
    return name, version


def _tool_trainlint(root: Path, key: str) -> str | None:
    data = _read_toml(root / "pyproject.toml")
    value = data.get("tool", {}).get("trainlint", {}).get(key) if data else None
    return str(value) if value else None


def _read_toml(path: Path) -> dict | None:
    reads.note(path)
    try:
        from trainlint.knowledge import tomlfile

        return tomlfile.load(path)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


# ---------------------------------------------------------------------------------------------
# pins


def version_from_specifier(spec: str | SpecifierSet, known: list[str]) -> str | None:
    """One version for a specifier set (see the module docstring); None if it has none."""
    from trainlint.knowledge.pep440 import InvalidSpecifier, SpecifierSet

    try:
        sset = SpecifierSet(spec) if isinstance(spec, str) else spec
    except InvalidSpecifier:
        return None
    specs = list(sset)
    if not specs:
        return None
    candidates = allowed_versions(sset, known)
    if candidates:
        return str(max(candidates))
    for op in ("===", "=="):
        for s in specs:
            if s.operator == op and "*" not in s.version:
                return s.version
    for s in specs:
        if s.operator == "==" and s.version.endswith(".*"):
            return s.version[:-2] + ".0" * (3 - s.version[:-2].count(".") - 1)
    for s in specs:
        if s.operator == "<=":
            return s.version
    for s in specs:
        if s.operator in (">=", "~=", ">"):
            return s.version
    return None


def _requirement_line(line: str) -> str:
    line = line.split(" #", 1)[0].split("\t#", 1)[0].strip()
    if line.startswith("#"):
        return ""
    line = line.rstrip("\\").strip()
    # per-requirement options such as --hash=... follow the requirement
    return re.split(r"\s+--?\w", line, maxsplit=1)[0].strip()


class Req(Row):
    """A requirement's project name and version specifier (what the pins need of
    ``packaging.requirements.Requirement``)."""

    __slots__ = ()
    _fields = ("name", "specifier")
    name: str
    specifier: SpecifierSet

    def __new__(_cls, name: str, specifier: SpecifierSet) -> Req:
        return tuple.__new__(_cls, (name, specifier))


_SPEC = r"(?:~=|===|==|!=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+"
# compiled on first use (re's cache, ~1 ms): ``_bare_requirement`` reads the usual forms
_SIMPLE_REQUIREMENT = (
    r"\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*"
    r"(?:\[\s*(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\s*"
    r"(?:,\s*[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\s*)*)?\])?\s*"
    rf"(?P<spec>{_SPEC}(?:\s*,\s*{_SPEC})*)?\s*")

_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME_CHARS = _ALNUM | frozenset("._-")
_VERSION_CHARS = _ALNUM | frozenset(".*+!_-")
_SPEC_OPERATORS = ("~=", "===", "==", "!=", "<=", ">=", "<", ">")  # the order of ``_SPEC``


def _bare_requirement(text: str) -> tuple[str, str] | None:
    """``(name, specifiers)`` of a requirement written without spaces or extras
    (``transformers>=4.40,<5``), as ``_SIMPLE_REQUIREMENT`` reads it; None for any other form
    (which the pattern then reads)."""
    i, n = 0, len(text)
    while i < n and text[i] in _NAME_CHARS:
        i += 1
    name, rest = text[:i], text[i:]
    if not name or name[0] not in _ALNUM or name[-1] not in _ALNUM:
        return None
    for piece in rest.split(",") if rest else ():
        op = next((o for o in _SPEC_OPERATORS if piece.startswith(o)), None)
        version = piece[len(op):] if op is not None else ""
        if not version or not _VERSION_CHARS.issuperset(version):
            return None
    return name, rest


def parse_requirement(text: str) -> Req | None:
    """The name and specifier of a PEP 508 requirement; None when it is not one. A plain
    ``name[extras] specifiers`` is read here with ``pep440.SpecifierSet`` alone; anything else
    (markers, URLs, parentheses) goes to ``packaging.requirements``, whose import brings
    ``packaging.markers``, ``packaging.tags``, logging and subprocess (~40 ms)."""
    bare = _bare_requirement(text)
    m = re.fullmatch(_SIMPLE_REQUIREMENT, text) if bare is None else None
    if bare is not None or m is not None:
        from trainlint.knowledge.pep440 import InvalidSpecifier, SpecifierSet

        name, spec = bare if bare is not None else (m.group("name"), m.group("spec") or "")  # type: ignore[union-attr]
        try:
            return Req(name, SpecifierSet(spec))
        except InvalidSpecifier:
            return None
    if _leading_name(text) is None:
        return None  # every requirement starts with its name (a comment, a flag, a path is none)
    from packaging.requirements import InvalidRequirement, Requirement

    from trainlint.knowledge.pep440 import wrap

    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    return Req(req.name, wrap(req.specifier))


_LEADING_NAME = lazy(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME_RUN_CHARS = _ALNUM | frozenset("._-")


def _leading_name(text: str) -> str | None:
    """``_LEADING_NAME.match(text).group(1)`` (None without a match), scanned by hand."""
    i, n = 0, len(text)
    while i < n and text[i].isspace():
        i += 1
    if i == n or text[i] not in _ALNUM:
        return None
    j = i + 1
    while j < n and text[j] in _NAME_RUN_CHARS:
        j += 1
    while text[j - 1] not in _ALNUM:  # the name ends with a letter or digit
        j -= 1
    return text[i:j]


def _matches(req_text: str, package: str) -> Req | None:
    lead = _leading_name(req_text)
    if lead is not None and canonicalize_name(lead) != canonicalize_name(package):
        return None  # another project's requirement, valid or not: not parsed
    req = parse_requirement(req_text)
    if req is None or canonicalize_name(req.name) != canonicalize_name(package):
        return None
    return req


def canonicalize_name(name: str) -> str:
    """PEP 503's normalized name (``packaging.utils.canonicalize_name``, whose module imports
    ``packaging.tags`` and with it logging and subprocess)."""
    return _SEPARATORS.sub("-", name).lower()


_SEPARATORS = re.compile(r"[-_.]+")


def _requirement_files(root: Path) -> list[Path]:
    reads.note_glob(root, REQUIREMENT_GLOB)  # the result depends on them (the cache)
    reads.note_glob(root / "requirements", "*.txt")
    files = sorted(p for p in requirement_files(root) if p.is_file())
    sub = root / "requirements"
    if sub.is_dir():
        files += sorted(p for p in sub.glob("*.txt") if p.is_file())
    return files


def find_pin(package: str, root: Path, known: list[str]) -> ResolvedVersion | None:
    """The one version the project's declaration of ``package`` gives (see
    :func:`declared_requirement`), ignoring what is installed."""
    declared = declared_requirement(package, root)
    if declared is None:
        return None
    v = version_from_specifier(declared[0], known)
    return ResolvedVersion(v, declared[1]) if v is not None else None


def declared_requirement(package: str, root: Path) -> tuple[SpecifierSet, str] | None:
    """The version range the project at ``root`` declares for ``package`` and where (``"requirements.txt:3"``),
    from the first declaration with a specifier, in the order of the module docstring."""
    key = str(Path(root).resolve())
    # once per check of a workspace (``reads.one_check``): the setups of a folder tree ask of
    # the same folders
    return reads.kept(("declared_requirement", package, key), lambda: _declared(package, key))


def _declared(package: str, root_text: str) -> tuple[SpecifierSet, str] | None:
    """The project's main declarations first (``requirements.txt``, ``[project]
    dependencies``, ``install_requires``), then the others (other requirement files,
    optional dependencies and groups, extras, conda, Docker), each in the docstring's order."""
    root = Path(root_text)
    for main in (True, False):
        for reader in (_from_requirement_files, _from_pyproject, _from_setup_py, _from_setup_cfg,
                       _from_environment_yml, _from_dockerfiles):
            if main and reader in (_from_environment_yml, _from_dockerfiles):
                continue
            try:
                found = reader(package, root, main)
            except (OSError, UnicodeDecodeError, ValueError, SyntaxError, RecursionError):
                found = None
            if found is not None:
                return found
    return None


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _from_requirement_lines(package: str, path: Path, root: Path, seen: set[Path]
                            ) -> tuple[SpecifierSet, str] | None:
    if path in seen or len(seen) > 50:
        return None
    seen.add(path)
    reads.note(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    includes: list[Path] = []
    for lineno, raw in enumerate(lines, 1):
        text = _requirement_line(raw)
        if not text:
            continue
        m = re.match(r"^(?:-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+)(\S+)", raw.strip())
        if m:
            includes.append((path.parent / m.group(1)).resolve())
            continue
        if text.startswith("-"):
            continue
        req = _matches(text, package)
        if req is not None and len(req.specifier):
            return req.specifier, f"{_rel(path, root)}:{lineno}"
    for inc in includes:
        found = _from_requirement_lines(package, inc, root, seen)
        if found is not None:
            return found
    return None


def _from_requirement_files(package: str, root: Path, main: bool = False) -> tuple[SpecifierSet, str] | None:
    seen: set[Path] = set()
    files = [root / name for name in MAIN_REQUIREMENT_FILES] if main else _requirement_files(root)
    for path in files:
        reads.note(path)
        if not path.is_file():
            continue
        found = _from_requirement_lines(package, path.resolve(), root.resolve(), seen)
        if found is not None:
            return found
    return None


def _from_pyproject(package: str, root: Path, main: bool = False) -> tuple[SpecifierSet, str] | None:
    pyproject = root / "pyproject.toml"
    reads.note(pyproject)  # found or not, the result depends on it (the cache), also on a hit below
    try:
        st = pyproject.stat()
    except OSError:
        return None
    key = (package, str(pyproject), main, st.st_mtime_ns, st.st_size)
    if key not in _PYPROJECT_FOUND:  # asked for each package's pins and oldest version: read once
        if len(_PYPROJECT_FOUND) > 256:
            _PYPROJECT_FOUND.clear()
        _PYPROJECT_FOUND[key] = _read_pyproject(package, pyproject, main)
    return _PYPROJECT_FOUND[key]


_PYPROJECT_FOUND: dict[tuple, tuple[SpecifierSet, str] | None] = {}


def _read_pyproject(package: str, pyproject: Path, main: bool) -> tuple[SpecifierSet, str] | None:
    data = _read_toml(pyproject)
    if not data:
        return None
    specs = _pyproject_specs(data, package, main)
    if not specs:
        return None
    return specs[0], f"pyproject.toml:{_line_of(pyproject.read_text(encoding='utf-8'), package)}"


def _first_spec(package: str, reqs: list[str]) -> SpecifierSet | None:
    for r in reqs:
        req = _matches(r.strip(), package) if isinstance(r, str) and r.strip() else None
        if req is not None and len(req.specifier):
            return req.specifier
    return None


def _from_setup_py(package: str, root: Path, main: bool = False) -> tuple[SpecifierSet, str] | None:
    """``install_requires=[...]`` / ``extras_require={...}`` of ``setup(...)`` written as
    literals (a name bound once to a list literal in the module counts too)."""
    import ast

    path = root / "setup.py"
    reads.note(path)
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    if package.lower() not in text.lower():
        return None
    tree = ast.parse(text)
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = node.value

    def strings(node: ast.AST | None, depth: int = 0) -> list[tuple[str, int]]:
        if node is None or depth > 4:
            return []
        if isinstance(node, ast.Name) and node.id in names:
            return strings(names[node.id], depth + 1)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return [(e.value, e.lineno) for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if isinstance(node, ast.Dict):
            return [s for v in node.values for s in strings(v, depth + 1)]
        if isinstance(node, ast.BinOp):
            return strings(node.left, depth + 1) + strings(node.right, depth + 1)
        return []

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup":
            for kw in node.keywords:
                if kw.arg == "install_requires" or (kw.arg == "extras_require" and not main):
                    for req_text, line in strings(kw.value):
                        req = _matches(req_text, package)
                        if req is not None and len(req.specifier):
                            return req.specifier, f"setup.py:{line}"
    # the transformers-style table: ``_deps = ["transformers>=4.53", ...]`` looked up by name
    for value in names.values() if not main else ():
        for req_text, line in strings(value) if isinstance(value, (ast.List, ast.Tuple)) else ():
            req = _matches(req_text, package)
            if req is not None and len(req.specifier):
                return req.specifier, f"setup.py:{line}"
    return None


def _from_setup_cfg(package: str, root: Path, main: bool = False) -> tuple[SpecifierSet, str] | None:
    path = root / "setup.cfg"
    reads.note(path)
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    section = ""
    key = ""
    for lineno, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section, key = stripped[1:-1].strip(), ""
            continue
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if not raw[:1].isspace() and "=" in raw:
            key, _, value = raw.partition("=")
            key = key.strip()
            candidates = [value.strip()]
        else:
            candidates = [stripped]
        wanted = (section == "options" and key == "install_requires") or (section == "options.extras_require" and not main)
        if not wanted:
            continue
        for c in candidates:
            text = _requirement_line(c.split(";", 1)[0] if ";" in c and "python_version" not in c else c)
            req = _matches(text, package) if text else None
            if req is not None and len(req.specifier):
                return req.specifier, f"setup.cfg:{lineno}"
    return None


def _from_environment_yml(package: str, root: Path, main: bool = False) -> tuple[SpecifierSet, str] | None:
    """``dependencies:`` of a conda environment file: ``- transformers=4.46.0`` (conda's
    single ``=`` means that release series) and ``- pip: [transformers==4.46.0]``."""
    for name in ("environment.yml", "environment.yaml", "env.yml", "conda.yml", "conda.yaml"):
        path = root / name
        reads.note(path)
        if not path.is_file():
            continue
        for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = re.match(r"^\s*-\s+([^#]+)", raw)
            if not m:
                continue
            entry = m.group(1).strip().strip("'\"")
            if "::" in entry:
                entry = entry.split("::", 1)[1]
            conda = re.match(r"^([A-Za-z0-9_.-]+)\s*=\s*([0-9][^=\s]*)(?:=\S+)?$", entry)
            if conda and not entry.startswith(conda.group(1) + "=="):
                entry = f"{conda.group(1)}=={conda.group(2)}" + ("" if "*" in conda.group(2) else ".*")
                if entry.count(".") >= 3 or conda.group(2).count(".") >= 2:
                    entry = f"{conda.group(1)}=={conda.group(2)}"
            req = _matches(entry, package)
            if req is not None and len(req.specifier):
                return req.specifier, f"{name}:{lineno}"
    return None


# compiled on first use (re's cache): only notebooks, shell scripts and Dockerfiles install
_PIP_INSTALL = r"\bpip3?\s+install\b(?P<args>[^&|;]*)"


def _joined_lines(lines: list[str]):
    """(index of the first line, the logical line) with backslash continuations joined, as a
    shell or a Dockerfile ``RUN`` reads them."""
    i = 0
    while i < len(lines):
        start, text = i, lines[i]
        while text.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text.rstrip()[:-1] + " " + lines[i]
        i += 1
        yield start, text


def _from_dockerfiles(package: str, root: Path, main: bool = False) -> tuple[SpecifierSet, str] | None:
    """``RUN pip install ... transformers==4.46.0`` (continuation lines joined)."""
    reads.note_glob(root, "Dockerfile*")  # the result depends on them (the cache)
    paths = sorted(p for p in root.glob("Dockerfile*") if p.is_file())
    for sub in ("docker", ".devcontainer"):
        reads.note_glob(root / sub, "**/Dockerfile*")
        if (root / sub).is_dir():
            paths += sorted(p for p in (root / sub).rglob("Dockerfile*") if p.is_file())
    for path in paths[:20]:
        reads.note(path)
        for start, text in _joined_lines(path.read_text(encoding="utf-8").splitlines()):
            for m in re.finditer(_PIP_INSTALL, text):
                for word in m.group("args").split():
                    word = word.strip("'\"")
                    if not word or word.startswith("-"):
                        continue
                    req = _matches(word, package)
                    if req is not None and len(req.specifier):
                        return req.specifier, f"{_rel(path, root)}:{start + 1}"
    return None


DECLARATION_LEVELS = 6
# requirement files at a project root: ``requirements.txt``, ``requirements-dev.txt`` and the
# singular ``requirement.txt`` (princeton-nlp/LESS pins transformers==4.36.2 there and its
# setup.py reads it); the main ones are read first
REQUIREMENT_GLOB = "requirement*.txt"


def requirement_files(folder: Path) -> list[Path]:
    """``list(folder.glob(REQUIREMENT_GLOB))``, in the same order, without compiling the glob's
    pattern (``requirement*.txt``: a name that starts with ``requirement`` and ends with
    ``.txt``, case-sensitive as on POSIX)."""
    if os.name != "posix":  # pragma: no cover - the glob folds case there
        return list(folder.glob(REQUIREMENT_GLOB))
    if not folder.is_dir():
        return []
    try:
        with os.scandir(folder) as entries:
            names = [e.name for e in entries]
    except PermissionError:
        return []
    return [folder / n for n in names if len(n) >= 15 and n.startswith("requirement") and n.endswith(".txt")]
MAIN_REQUIREMENT_FILES = ("requirements.txt", "requirement.txt")


def declaration_folders(root: Path) -> list[Path]:
    """Where a target version may be declared, nearest first: ``root``, then the folders above
    it up to the repository's top (the folder with ``.git``), at most ``DECLARATION_LEVELS``.
    A folder of a repository with its own ``requirements.txt`` that does not name transformers
    (Qwen's ``recipes/finetune/deepspeed``: deepspeed and peft) runs on the repository's pin."""
    out = [Path(root)]
    current = Path(os.path.abspath(root))
    for _ in range(DECLARATION_LEVELS):
        if (current / ".git").exists() or current.parent == current:
            break
        current = current.parent
        out.append(current)
    if not (current / ".git").exists():
        return out[:1]  # no repository above: nothing beyond the project's own folder
    return out


def find_project_root(paths: list[Path] | list[str]) -> Path | None:
    """The project the checked paths belong to: the nearest folder at or above their common
    folder that has a ``.git``, ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or a
    ``requirements*.txt``; else the common folder itself. Resolved once per run, from the
    command line's paths (never from the files a worker happens to hold)."""
    if not paths:
        return None
    folders = []
    for p in paths:
        p = Path(os.path.abspath(p))  # not resolve(): a link loop among the paths is reported, not raised
        try:
            folders.append(p if p.is_dir() else p.parent)
        except OSError:
            folders.append(p.parent)
    try:
        common = Path(os.path.commonpath([str(f) for f in folders]))
    except ValueError:  # paths on different drives
        return None
    current = common
    for _ in range(12):
        try:
            if any((current / m).exists() for m in (".git", "pyproject.toml", "setup.py", "setup.cfg")) \
                    or any(requirement_files(current)):
                return current
        except OSError:
            pass
        if current.parent == current:
            break
        current = current.parent
    return common


def _old_find_pin(package: str, root: Path, known: list[str]) -> ResolvedVersion | None:
    """The version pinned for ``package`` in the project at ``root`` (see module docstring)."""
    for path in _requirement_files(root):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for lineno, raw in enumerate(lines, 1):
            text = _requirement_line(raw)
            if not text or text.startswith("-"):
                continue
            req = _matches(text, package)
            if req is None:
                continue
            v = version_from_specifier(req.specifier, known)
            if v is not None:
                return ResolvedVersion(v, f"{path.relative_to(root).as_posix()}:{lineno}")
    pyproject = root / "pyproject.toml"
    data = _read_toml(pyproject)
    if data:
        text = pyproject.read_text(encoding="utf-8")
        for spec in _pyproject_specs(data, package):
            v = version_from_specifier(spec, known)
            if v is not None:
                return ResolvedVersion(v, f"pyproject.toml:{_line_of(text, package)}")
    return None


def _pyproject_specs(data: dict, package: str, main: bool = False, unpinned: bool = False) -> list[SpecifierSet]:
    from trainlint.knowledge.pep440 import SpecifierSet

    out: list[SpecifierSet] = []
    project = data.get("project", {})
    reqs = list(project.get("dependencies", []) or [])
    if not main:
        for extra in (project.get("optional-dependencies", {}) or {}).values():
            reqs += list(extra or [])
        for group in (data.get("dependency-groups", {}) or {}).values():
            reqs += [r for r in (group or []) if isinstance(r, str)]
    for r in reqs:
        req = _matches(str(r), package) if isinstance(r, str) else None
        if req is not None and (len(req.specifier) or unpinned):
            out.append(req.specifier)
    poetry = data.get("tool", {}).get("poetry", {})
    tables = [poetry.get("dependencies", {})]
    if not main:
        tables.append(poetry.get("dev-dependencies", {}))
        for group in (poetry.get("group", {}) or {}).values():
            tables.append((group or {}).get("dependencies", {}))
    for table in tables:
        for name, value in (table or {}).items():
            if canonicalize_name(name) != canonicalize_name(package):
                continue
            constraint = value.get("version") if isinstance(value, dict) else value
            if isinstance(constraint, str):
                spec = _poetry_spec(constraint)
                if spec is not None:
                    out.append(spec)
    return out


def _poetry_spec(constraint: str) -> SpecifierSet | None:
    """Poetry constraint -> PEP 440 specifier set (``^4.46`` -> ``>=4.46,<5``)."""
    from trainlint.knowledge.pep440 import InvalidSpecifier, SpecifierSet

    parts = []
    for c in constraint.split(","):
        c = c.strip()
        if not c or c == "*":
            continue
        if c[0] in "^~" and not c.startswith("~="):
            base = c[1:].strip()
            nums = [int(x) for x in re.findall(r"\d+", base)]
            if not nums:
                return None
            if c[0] == "^":
                i = next((k for k, n in enumerate(nums) if n != 0), len(nums) - 1)
            else:
                i = 1 if len(nums) > 1 else 0
            upper = nums[: i + 1]
            upper[-1] += 1
            parts += [f">={base}", "<" + ".".join(map(str, upper))]
        elif c[0].isdigit():
            parts.append(f"=={c}")
        else:
            parts.append(c)
    try:
        return SpecifierSet(",".join(parts)) if parts else None
    except InvalidSpecifier:
        return None


def _line_of(text: str, package: str) -> int:
    """The first line that writes a requirement on ``package`` (its name in any case, at the
    line's start or after a quote or a space, then ``[``, a comparison or ``=``), else 1.
    ASCII lines are scanned by hand (``_requirement_at``); the pattern, ~0.8 ms to compile with
    ``re.IGNORECASE``, is compiled only for a line or name that is not ASCII."""
    name = package.lower()
    pat = None
    for i, line in enumerate(text.splitlines(), 1):
        if line.isascii() and package.isascii():
            if _requirement_at(line.lower(), name):
                return i
            continue
        if pat is None:
            pat = _requirement_pattern(package)
        if pat.search(line):
            return i
    return 1


def _requirement_pattern(package: str) -> re.Pattern[str]:
    return re.compile(r"""(^|["'\s])""" + re.escape(package) + r"""\s*(\[|[<>=!~^]|["']?\s*=)""", re.IGNORECASE)


def _requirement_at(line: str, name: str) -> bool:
    """``_requirement_pattern(name).search(line)`` for a lower-case ASCII line and name."""
    n = len(line)
    start = line.find(name)
    while start >= 0:
        if start == 0 or line[start - 1] in "\"'" or line[start - 1].isspace():
            k = start + len(name)
            while k < n and line[k].isspace():
                k += 1
            if k < n:
                c = line[k]
                if c in "[<>=!~^":
                    return True
                if c in "\"'":
                    k += 1
                    while k < n and line[k].isspace():
                        k += 1
                    if k < n and line[k] == "=":
                        return True
        start = line.find(name, start + 1)
    return False


def oldest_allowed(package: str, root: Path, known: list[str]) -> ResolvedVersion | None:
    """The oldest known version the project at ``root`` declares it supports, with where:
    the lowest known version in the range of its declared requirement
    (:func:`declared_requirement`); else, from requirement files, pyproject.toml and
    setup.py, the lowest known version every requirement on ``package`` allows (an unpinned
    one allows every version). None when nothing is declared. A fix that writes a name newer
    than this breaks the project on versions it says it supports, whatever is installed."""

    declared = declared_requirement(package, root)
    if declared is not None:
        spec, where = declared
        low = lowest_allowed(spec, known)  # a pin older than the data is its own version
        if low is not None:
            return ResolvedVersion(low, where)
    return _oldest_scanned(package, root, known)


def _oldest_scanned(package: str, root: Path, known: list[str]) -> ResolvedVersion | None:
    """The oldest known version the project at ``root`` declares it supports: the lowest
    known version that satisfies every requirement on ``package`` it writes (requirements
    files and pyproject.toml, extras included: an install with extras must satisfy them all),
    with where its lower bound is written; None when nothing is declared. A fix that writes a
    name newer than this breaks the project on versions it says it supports, whatever version
    is installed."""
    from trainlint.knowledge.pep440 import InvalidVersion, SpecifierSet, Version

    specs: list[tuple[SpecifierSet, str]] = []
    for path in _requirement_files(root):
        reads.note(path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for lineno, raw in enumerate(lines, 1):
            text = _requirement_line(raw)
            req = _matches(text, package) if text and not text.startswith("-") else None
            if req is not None:  # unpinned: every version is allowed
                specs.append((req.specifier, f"{path.relative_to(root).as_posix()}:{lineno}"))
    pyproject = root / "pyproject.toml"
    data = _read_toml(pyproject)
    if data:
        text = pyproject.read_text(encoding="utf-8")
        for spec in _pyproject_specs(data, package, unpinned=True):
            specs.append((spec, f"pyproject.toml:{_line_of(text, package)}"))
    setup_py = root / "setup.py"
    reads.note(setup_py)
    if setup_py.is_file():  # install_requires strings, read as text (never run)
        try:
            text = setup_py.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        for m in re.finditer(r"[\"']\s*(" + re.escape(package) + r"\b[^\"']*)[\"']", text):
            req = _matches(m.group(1), package)
            if req is not None:
                specs.append((req.specifier, f"setup.py:{text.count(chr(10), 0, m.start()) + 1}"))
    if not specs:
        return None

    def ok(v: str, sets: list[SpecifierSet]) -> bool:
        try:
            return all(s.contains(Version(v), prereleases=False) for s in sets)
        except InvalidVersion:
            return False

    # the known versions, and those the clauses name (a pin older than the data: ==4.38.2)
    named = [c.version for s, _ in specs for c in s
             if c.operator in ("==", "===", ">=", "~=") and "*" not in c.version]
    allowed = [v for v in dict.fromkeys([*known, *named]) if ok(v, [s for s, _ in specs])]
    if not allowed:
        return None
    low = min(allowed, key=Version)
    # where: the requirement that sets the lower end (the one that refuses the version before)
    where = next((w for s, w in specs if any(op in str(s) for op in (">", "~="))), specs[0][1])
    return ResolvedVersion(low, where)


def allowed_versions(spec, known) -> list:
    """The ``known`` versions (as ``pep440`` Versions) that ``spec`` admits, pre-releases
    excluded; unparsable version strings are skipped."""
    from trainlint.knowledge.pep440 import InvalidVersion, Version

    out = []
    for v in known:
        try:
            if spec.contains(Version(v), prereleases=False):
                out.append(Version(v))
        except InvalidVersion:
            continue
    return out


# -- what a notebook or shell script installs itself ------------------------------------------

_MAGIC_PIP = r"^\s*(?:!|%)\s*(?:%\s*)?(?:pip3?|python3?\s+-m\s+pip|uv\s+pip|conda)\b"  # compiled on first use
_SHELL_CELL = r"^\s*%%(?:bash|sh|script\s+\S*sh|capture)\b"


def _install_lines(path: Path) -> list[tuple[str, str]]:
    """(command text, where) of the ``pip install`` lines a file runs itself: a notebook's
    ``!pip``/``%pip`` lines and the lines of its ``%%bash`` cells, or a shell script's lines;
    continuation lines joined. Other kinds of file run no install line."""
    suffix = path.suffix.lower()
    chunks: list[tuple[list[str], str, bool]] = []  # (lines, where prefix, every line is shell)
    reads.note(path)
    # the text the run read (its split reads every walked file once): the same as decoding the
    # file's bytes here, unless it starts with a byte order mark (kept below, dropped there)
    tf = reads.already_read(str(path))
    if tf is not None and not tf.bom and tf.encoding == "utf-8":
        text = tf.text
        if "install" not in text:
            return []
    else:
        try:
            data = path.read_bytes()
        except OSError:
            return []
        if b"install" not in data:  # every line kept below says it (JSON never escapes ASCII letters)
            return []
        try:
            # (no newline translation: the lines are split below either way, and a notebook's
            # text is then the one its reader decoded, found without decoding it again)
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return []
    if suffix == ".ipynb":
        for n, src in _code_cells(text):
            if "install" not in src:  # no line of it can be kept (a continuation joins with a space)
                continue
            lines = src.splitlines()
            shell = bool(lines) and bool(re.match(_SHELL_CELL, lines[0]))
            chunks.append((lines, f"{path.name}:cell {n}", shell))
    elif suffix in (".sh", ".bash"):
        chunks.append((text.splitlines(), path.name, True))
    out: list[tuple[str, str]] = []
    for lines, where, shell in chunks:
        for start, line in _joined_lines(lines):
            stripped = line.lstrip()
            if stripped.startswith("#"):
                continue
            if (shell or re.match(_MAGIC_PIP, line)) and "install" in line:
                out.append((line, f"{where}" + (f" line {start + 1}" if where.endswith(".sh") or
                                                   where.endswith(".bash") else "")))
    return out


def _code_cells(text: str) -> list[tuple[int, str]]:
    """(number, source) of a notebook's code cells. When the notebook reader is loaded (this
    process read notebooks) its cells, decoded once per process, are used: the same as the JSON
    gives for a well-formed nbformat 4 notebook without a byte order mark."""
    import json
    import sys

    reader = sys.modules.get("trainlint.sources.notebook")
    if reader is not None and not text.startswith("\ufeff"):
        cells = reader.decoded_cells(text)
        if cells is not None:
            return [(n, src) for n, (kind, src) in enumerate(cells, 1) if kind == "code"]
    try:
        data = json.loads(text)
    except ValueError:
        return []
    cells = data.get("cells") if isinstance(data, dict) else None
    out = []
    for n, cell in enumerate(cells if isinstance(cells, list) else [], 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source")
        out.append((n, "".join(src) if isinstance(src, list) else src if isinstance(src, str) else ""))
    return out


@reads.memo(maxsize=1024)
def _install_lines_of(path_text: str, _stamp: tuple) -> tuple[tuple[str, str], ...]:
    """``_install_lines`` once per file version (several packages and questions ask it: the
    same notebook was read and decoded for each)."""
    return tuple(_install_lines(Path(path_text)))


@reads.memo(maxsize=256)
def _file_installs(package: str, path_text: str, _stamp: tuple) -> tuple[str, str] | None:
    for line, where in _install_lines_of(path_text, _stamp):
        for m in re.finditer(_PIP_INSTALL, line.replace("%pip", "pip").replace("!pip", "pip")):
            for word in m.group("args").split():
                word = word.strip("'\"")
                if not word or word.startswith("-") or "://" in word:
                    continue
                req = _matches(word, package)
                if req is not None and len(req.specifier):
                    return str(req.specifier), where
    return None


@reads.memo(maxsize=256)
def _installs_checkout(package: str, path_text: str, _stamp: tuple) -> str | None:
    for line, where in _install_lines_of(path_text, _stamp):
        for m in re.finditer(_PIP_INSTALL, line.replace("%pip", "pip").replace("!pip", "pip")):
            for word in m.group("args").split():
                word = word.strip("'\"").rstrip("/")
                if word.startswith(("./", "../", "/", "~")) and word.rsplit("/", 1)[-1].lower() == package.lower():
                    return where
                g = re.search(r"github\.com[/:]([^/]+)/([A-Za-z0-9_.-]+?)(?:\.git)?(@[^#\s]+)?(?:#.*)?$", word)
                if g and g.group(2).lower() == package.lower() and (g.group(3) or g.group(1).lower() != "huggingface"):
                    return where
    return None


def installs_checkout(package: str, path: str | Path) -> str | None:
    """Where a notebook or shell script installs ``package`` from a checkout whose version is
    not known (``pip install ./transformers`` after cloning a branch, a fork or a tagged git
    URL), else None."""
    p = Path(path)
    if p.suffix.lower() not in (".ipynb", ".sh", ".bash"):
        return None
    try:
        st = p.stat()
    except OSError:
        return None
    return _installs_checkout(package, str(p), (st.st_mtime_ns, st.st_size))


@reads.memo(maxsize=256)
def _installs_unpinned(package: str, path_text: str, _stamp: tuple) -> bool:
    for line, _where in _install_lines_of(path_text, _stamp):
        for m in re.finditer(_PIP_INSTALL, line.replace("%pip", "pip").replace("!pip", "pip")):
            for word in m.group("args").split():
                word = word.strip("'\"")
                if "://" in word:  # git+https://github.com/huggingface/transformers.git: the main branch
                    m = re.search(r"/([A-Za-z0-9_.-]+?)(?:\.git)?(@[^#\s]+)?(?:#.*)?$", word)
                    if m and m.group(1).lower() == package.lower() and not m.group(2):
                        return True
                elif word and not word.startswith("-"):
                    req = _matches(word, package)
                    if req is not None and not len(req.specifier):
                        return True
    return False


def installs_unpinned(package: str, path: str | Path) -> bool:
    """Whether a notebook or shell script installs ``package`` without a version (``!pip
    install --upgrade transformers``): it runs on the newest release."""
    p = Path(path)
    if p.suffix.lower() not in (".ipynb", ".sh", ".bash"):
        return False
    try:
        st = p.stat()
    except OSError:
        return False
    return _installs_unpinned(package, str(p), (st.st_mtime_ns, st.st_size))


def file_installs(package: str, path: str | Path) -> tuple[SpecifierSet, str] | None:
    """The version range of ``package`` that a notebook or shell script installs itself
    (``%pip install "transformers==4.44.2"`` in a cell, ``pip install trl==0.9.6`` in a
    script), with where (``nb.ipynb:cell 2``); None when it installs no pinned version of it.
    Such a file runs on that version whatever the project or the machine has."""
    p = Path(path)
    if p.suffix.lower() not in (".ipynb", ".sh", ".bash"):
        return None
    try:
        st = p.stat()
    except OSError:
        return None
    found = _file_installs(package, str(p), (st.st_mtime_ns, st.st_size))
    if found is None:
        return None
    from trainlint.knowledge.pep440 import SpecifierSet

    return SpecifierSet(found[0]), found[1]


def lowest_allowed(spec: SpecifierSet, known: list[str]) -> str | None:
    """The oldest version ``spec`` admits: the oldest ``known`` one, else the version an
    ``==``/``>=``/``~=`` clause names (a pin older than the data)."""
    from trainlint.knowledge.pep440 import InvalidVersion, Version

    # the oldest of ``allowed_versions(spec, known)`` (the first of equal ones), each version
    # parsed once
    low = None
    for v in known:
        try:
            parsed = Version(v)
            if spec.contains(parsed, prereleases=False) and (low is None or parsed < low):
                low = parsed
        except InvalidVersion:
            continue
    named = [s.version for s in spec if s.operator in ("==", "===", ">=", "~=") and "*" not in s.version]
    candidates = [low] if low is not None else []
    for v in named:
        try:
            candidates.append(Version(v))
        except InvalidVersion:
            continue
    candidates = [v for v in candidates if spec.contains(v, prereleases=True)]
    return str(min(candidates)) if candidates else None


@reads.memo(maxsize=256)
def _installs_named(package: str, path_text: str, _stamp: tuple) -> str | None:
    for line, where in _install_lines_of(path_text, _stamp):
        for m in re.finditer(_PIP_INSTALL, line.replace("%pip", "pip").replace("!pip", "pip")):
            for word in m.group("args").split():
                word = word.strip("'\"")
                if word and not word.startswith("-") and "://" not in word and _matches(word, package) is not None:
                    return where
    return None


# compiled on first use (re's cache): only scripts with inline metadata need it
_INLINE_METADATA = r"(?m)^# /// script\s*$\n((?:^#(?:[ \t].*)?\n)*?)^# ///\s*$"


def inline_dependencies(text: str) -> list[str] | None:
    """The ``dependencies`` of a script's inline metadata (PEP 723: a ``# /// script`` comment
    block, what ``uv run``/``pipx run`` and marimo install before running it); None without one."""
    m = re.search(_INLINE_METADATA, text)
    if m is None:
        return None
    body = "\n".join(line[2:] if line.startswith("# ") else line[1:] for line in m.group(1).splitlines())
    try:
        deps = tomllib.loads(body).get("dependencies", [])
    except (ValueError, TypeError):
        return None
    return [d for d in deps if isinstance(d, str)] if isinstance(deps, list) else None


def installs_named(package: str, path: str | Path, text: str | None = None) -> str | None:
    """Where a file makes ``package`` available itself, any version: a notebook's or shell
    script's ``pip install`` line (``nb.ipynb:cell 2``), or a Python script's inline metadata
    (PEP 723 ``# /// script`` dependencies: ``train.py inline metadata``); else None."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".py":
        if text is None:
            reads.note(p)
            try:
                text = p.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
        if "# /// script" not in text:
            return None
        deps = inline_dependencies(text) or []
        return f"{p.name} inline metadata" if any(_matches(d, package) is not None for d in deps) else None
    if suffix not in (".ipynb", ".sh", ".bash"):
        return None
    try:
        st = p.stat()
    except OSError:
        return None
    return _installs_named(package, str(p), (st.st_mtime_ns, st.st_size))
