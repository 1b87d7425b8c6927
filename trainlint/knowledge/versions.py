"""Which transformers / TRL version a check targets, found without importing anything.

Order (the first that gives a version wins):

1. the explicit value: ``--transformers-version`` / ``--trl-version``, or
   ``[tool.trainlint] transformers-version`` / ``trl-version`` (passed in as ``explicit``;
   when it is not passed and ``project_root`` has a pyproject.toml with that key, it is read
   from there);
2. the installed distribution's version from package metadata
   (:func:`importlib.metadata.version`; the package itself is never imported);
3. a pin in the checked project: ``requirements*.txt`` and ``requirements/*.txt`` at the
   project root (sorted by name), then ``pyproject.toml`` (``[project] dependencies``,
   ``[project.optional-dependencies]``, ``[tool.poetry.dependencies]`` and its groups);
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
from typing import TYPE_CHECKING, Callable, NamedTuple

from trainlint.knowledge import training_args

if TYPE_CHECKING:  # pragma: no cover
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

# ``packaging`` (~50 ms to import its requirement parser) is imported only when a project pin
# has to be read, never when the version is given or installed.

if sys.version_info >= (3, 11):  # pragma: no cover
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "ResolvedVersion",
    "resolve_transformers_version",
    "resolve_trl_version",
    "version_from_specifier",
    "find_pin",
]


class ResolvedVersion(NamedTuple):
    version: str
    source: str


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
    if use_installed:
        installed = installed_version(package)
        if installed:
            return ResolvedVersion(installed, "installed")
    known = known_versions()
    if root is not None:
        pin = find_pin(package, root, known)
        if pin is not None:
            return pin
    return ResolvedVersion(known[-1], "newest known")


_DIST = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._]*?)-(?P<version>[0-9][^-]*?)\.(dist-info|egg-info)$")


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
            m = _DIST.match(n)
            if m:
                found.setdefault(_normalize(m.group("name")), m.group("version"))
    return found


def _tool_trainlint(root: Path, key: str) -> str | None:
    data = _read_toml(root / "pyproject.toml")
    value = data.get("tool", {}).get("trainlint", {}).get(key) if data else None
    return str(value) if value else None


def _read_toml(path: Path) -> dict | None:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


# ---------------------------------------------------------------------------------------------
# pins


def version_from_specifier(spec: str | SpecifierSet, known: list[str]) -> str | None:
    """One version for a specifier set (see the module docstring); None if it has none."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        sset = spec if isinstance(spec, SpecifierSet) else SpecifierSet(spec)
    except InvalidSpecifier:
        return None
    specs = list(sset)
    if not specs:
        return None
    candidates = []
    for v in known:
        try:
            if sset.contains(Version(v), prereleases=False):
                candidates.append(Version(v))
        except InvalidVersion:
            continue
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


def _matches(req_text: str, package: str) -> Requirement | None:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        req = Requirement(req_text)
    except InvalidRequirement:
        return None
    if canonicalize_name(req.name) != canonicalize_name(package):
        return None
    return req


def _requirement_files(root: Path) -> list[Path]:
    files = sorted(p for p in root.glob("requirements*.txt") if p.is_file())
    sub = root / "requirements"
    if sub.is_dir():
        files += sorted(p for p in sub.glob("*.txt") if p.is_file())
    return files


def find_pin(package: str, root: Path, known: list[str]) -> ResolvedVersion | None:
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


def _pyproject_specs(data: dict, package: str, unpinned: bool = False) -> list[SpecifierSet]:
    from packaging.specifiers import SpecifierSet
    from packaging.utils import canonicalize_name

    out: list[SpecifierSet] = []
    project = data.get("project", {})
    reqs = list(project.get("dependencies", []) or [])
    for extra in (project.get("optional-dependencies", {}) or {}).values():
        reqs += list(extra or [])
    for r in reqs:
        req = _matches(str(r), package) if isinstance(r, str) else None
        if req is not None and (len(req.specifier) or unpinned):
            out.append(req.specifier)
    poetry = data.get("tool", {}).get("poetry", {})
    tables = [poetry.get("dependencies", {}), poetry.get("dev-dependencies", {})]
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
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

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
    pat = re.compile(r"""(^|["'\s])""" + re.escape(package) + r"""\s*(\[|[<>=!~^]|["']?\s*=)""", re.IGNORECASE)
    for i, line in enumerate(text.splitlines(), 1):
        if pat.search(line):
            return i
    return 1


def oldest_allowed(package: str, root: Path, known: list[str]) -> ResolvedVersion | None:
    """The oldest known version the project at ``root`` declares it supports: the lowest
    known version that satisfies every requirement on ``package`` it writes (requirements
    files and pyproject.toml, extras included: an install with extras must satisfy them all),
    with where its lower bound is written; None when nothing is declared. A fix that writes a
    name newer than this breaks the project on versions it says it supports, whatever version
    is installed."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    specs: list[tuple[SpecifierSet, str]] = []
    for path in _requirement_files(root):
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

    allowed = [v for v in known if ok(v, [s for s, _ in specs])]
    if not allowed:
        return None
    low = min(allowed, key=Version)
    # where: the requirement that sets the lower end (the one that refuses the version before)
    where = next((w for s, w in specs if any(op in str(s) for op in (">", "~="))), specs[0][1])
    return ResolvedVersion(low, where)
