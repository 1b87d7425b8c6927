"""Target version resolution: explicit, [tool.trainlint], installed metadata, project pins, newest."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from trainlint.knowledge import training_args as ta
from trainlint.knowledge import versions as V


def write(root: Path, name: str, text: str) -> Path:
    p = root / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def tf(root, explicit=None, **kw):
    return V.resolve_transformers_version(explicit, root, use_installed=False, **kw)


def test_explicit_wins_over_everything(tmp_path):
    write(tmp_path, "requirements.txt", "transformers==4.46.0\n")
    write(tmp_path, "pyproject.toml", '[tool.trainlint]\ntransformers-version = "4.51.0"\n')
    assert V.resolve_transformers_version("5.0.0", tmp_path) == ("5.0.0", "--transformers-version")
    assert tf(tmp_path, "4.40.0", explicit_source="config") == ("4.40.0", "config")


def test_tool_trainlint_key_before_installed(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.trainlint]\ntransformers-version = "4.51.0"\ntrl-version = "0.19.0"\n')
    assert V.resolve_transformers_version(None, tmp_path) == ("4.51.0", "pyproject.toml [tool.trainlint]")
    assert V.resolve_trl_version(None, tmp_path) == ("0.19.0", "pyproject.toml [tool.trainlint]")


def test_installed_used_only_inside_the_declared_range(tmp_path):
    try:
        installed = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("transformers is not installed")
    major = installed.split(".")[0]
    # the installed version satisfies the range: it is the target, saying which range
    write(tmp_path, "requirements.txt", f"transformers>={major}.0\n")
    assert V.resolve_transformers_version(None, tmp_path) == (installed, "installed, within requirements.txt:1")
    # it does not: the declared pin wins over what happens to be installed
    write(tmp_path, "requirements.txt", "transformers==4.46.0\n")
    assert V.resolve_transformers_version(None, tmp_path) == ("4.46.0", "requirements.txt:1")
    write(tmp_path, "requirements.txt", "transformers>=4.40,<4.47\n")
    assert V.resolve_transformers_version(None, tmp_path) == ("4.46.3", "requirements.txt:1")
    # nothing declared: the installed version
    (tmp_path / "requirements.txt").unlink()
    assert V.resolve_transformers_version(None, tmp_path) == (installed, "installed")


def test_installed_missing_package_falls_through(tmp_path, monkeypatch):
    # when the package is not installed (trl is in the dev extra, so pretend), a pin decides
    write(tmp_path, "requirements.txt", "trl==0.16.1\n")
    monkeypatch.setattr(V, "installed_version", lambda package: None)
    assert V.resolve_trl_version(None, tmp_path) == ("0.16.1", "requirements.txt:1")


def test_exact_pin_with_line_number(tmp_path):
    write(tmp_path, "requirements.txt", "# deps\ntorch>=2.1\ntransformers==4.46.0  # pinned\naccelerate\n")
    assert tf(tmp_path) == ("4.46.0", "requirements.txt:3")


def test_range_takes_the_newest_known_inside_it(tmp_path):
    write(tmp_path, "requirements.txt", "transformers>=4.40,<5\n")
    newest_4 = max((v for v in ta.known_versions() if v.startswith("4.")), key=ta.vkey)
    assert tf(tmp_path) == (newest_4, "requirements.txt:1")
    assert newest_4.startswith("4.57.")


def test_compatible_release_and_wildcard(tmp_path):
    write(tmp_path, "requirements-train.txt", "Transformers[torch] ~= 4.46.0 ; python_version >= '3.9'\n")
    v, src = tf(tmp_path)
    assert v.startswith("4.46.") and v != "4.46.0" and src == "requirements-train.txt:1"
    write(tmp_path, "requirements-train.txt", "transformers==4.51.*\n")
    assert tf(tmp_path)[0].startswith("4.51.")


def test_unknown_exact_pin_is_kept(tmp_path):
    write(tmp_path, "requirements.txt", "transformers==4.38.2\n")
    assert tf(tmp_path) == ("4.38.2", "requirements.txt:1")
    assert ta.data_version_for("4.38.2") == ta.known_versions()[0]


def test_lower_bound_only_takes_newest_known(tmp_path):
    write(tmp_path, "requirements.txt", "transformers>=4.40\n")
    assert tf(tmp_path) == (ta.newest(), "requirements.txt:1")


def test_unpinned_requirement_is_not_a_pin(tmp_path):
    write(tmp_path, "requirements.txt", "transformers\n-r other.txt\n--extra-index-url https://x\n")
    assert tf(tmp_path) == (ta.newest(), "newest known")


def test_requirements_folder_and_hashes(tmp_path):
    write(tmp_path, "requirements/base.txt", "transformers==4.57.1 \\\n    --hash=sha256:abc\n")
    assert tf(tmp_path) == ("4.57.1", "requirements/base.txt:1")


def test_pyproject_dependencies(tmp_path):
    write(
        tmp_path,
        "pyproject.toml",
        '[project]\nname = "x"\ndependencies = [\n  "torch",\n  "transformers>=4.46,<4.52",\n]\n',
    )
    v, src = tf(tmp_path)
    assert v.startswith("4.51.") and src == "pyproject.toml:5"


def test_pyproject_optional_dependencies_and_trl(tmp_path):
    write(
        tmp_path,
        "pyproject.toml",
        '[project]\nname = "x"\n[project.optional-dependencies]\ntrain = ["trl==0.19.0"]\n',
    )
    assert V.resolve_trl_version(None, tmp_path, use_installed=False) == ("0.19.0", "pyproject.toml:4")


def test_poetry_caret(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.10"\ntransformers = "^4.46"\n')
    v, src = tf(tmp_path)
    assert v.startswith("4.57.") and src == "pyproject.toml:3"
    write(tmp_path, "pyproject.toml", '[tool.poetry.dependencies]\ntransformers = {version = "~4.46.1"}\n')
    assert tf(tmp_path)[0].startswith("4.46.")


def test_requirements_before_pyproject(tmp_path):
    write(tmp_path, "requirements.txt", "transformers==4.46.0\n")
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\ndependencies = ["transformers==4.51.0"]\n')
    assert tf(tmp_path) == ("4.46.0", "requirements.txt:1")


def test_newest_known_fallback(tmp_path):
    assert tf(tmp_path) == (ta.newest(), "newest known")
    assert tf(None) == (ta.newest(), "newest known")
    assert V.resolve_trl_version(None, tmp_path, use_installed=False) == (ta.trl_newest(), "newest known")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("==4.46.0", "4.46.0"), ("<=4.0.0", "4.0.0"), ("==3.0.0", "3.0.0"), ("", None), (">=99", "99")],
)
def test_version_from_specifier(spec, expected):
    assert V.version_from_specifier(spec, ta.known_versions()) == expected


def test_installed_version_reads_dist_info_like_importlib_metadata():
    for package in ("pydantic", "click", "ruamel.yaml", "pre-commit", "typing_extensions", "transformers"):
        try:
            expected = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            expected = None
        assert V.installed_version(package) == expected, package
    assert V.installed_version("no-such-distribution-xyz") is None


# -- declared by the project in every usual place (issue 13 section 4) ---------------------------


def test_requirements_include_is_followed(tmp_path):
    write(tmp_path, "requirements.txt", "-r requirements/base.txt\ntorch\n")
    write(tmp_path, "requirements/base.txt", "datasets\ntransformers==4.46.1\n")
    assert tf(tmp_path) == ("4.46.1", "requirements/base.txt:2")


def test_setup_py_install_requires(tmp_path):
    write(tmp_path, "setup.py", 'from setuptools import setup\n_deps = [\n    "torch",\n    "transformers>=4.41,<4.42",\n]\n'
                                'setup(name="x", install_requires=_deps)\n')
    assert tf(tmp_path) == ("4.41.2", "setup.py:4")


def test_setup_py_extras(tmp_path):
    write(tmp_path, "setup.py", 'from setuptools import setup\nsetup(name="x", extras_require={"train": ["trl==0.19.1"]})\n')
    assert V.resolve_trl_version(None, tmp_path, use_installed=False) == ("0.19.1", "setup.py:2")


def test_setup_cfg_install_requires(tmp_path):
    write(tmp_path, "setup.cfg", "[metadata]\nname = x\n\n[options]\ninstall_requires =\n    torch\n"
                                 "    transformers==4.44.2\n")
    assert tf(tmp_path) == ("4.44.2", "setup.cfg:7")


def test_environment_yml_conda_and_pip(tmp_path):
    write(tmp_path, "environment.yml", "name: x\ndependencies:\n  - python=3.10\n  - pip\n  - pip:\n"
                                       "    - transformers==4.43.4\n    - trl>=0.15,<0.16\n")
    assert tf(tmp_path) == ("4.43.4", "environment.yml:6")
    assert V.resolve_trl_version(None, tmp_path, use_installed=False)[0].startswith("0.15.")
    write(tmp_path, "environment.yml", "dependencies:\n  - conda-forge::transformers=4.45\n")
    assert tf(tmp_path) == ("4.45.2", "environment.yml:2")


def test_dockerfile_pip_line(tmp_path):
    write(tmp_path, "Dockerfile", "FROM pytorch/pytorch\nRUN pip install --no-cache-dir \\\n"
                                  "    datasets \\\n    'transformers==4.48.0' && rm -rf /root/.cache\n")
    assert tf(tmp_path) == ("4.48.0", "Dockerfile:2")


def test_pyproject_dependency_groups(tmp_path):
    write(tmp_path, "pyproject.toml", '[dependency-groups]\ntrain = ["transformers~=4.47.0"]\n')
    assert tf(tmp_path) == ("4.47.1", "pyproject.toml:2")


def test_requirements_before_other_declarations(tmp_path):
    write(tmp_path, "requirements.txt", "transformers==4.46.0\n")
    write(tmp_path, "setup.py", 'from setuptools import setup\nsetup(install_requires=["transformers==4.40.0"])\n')
    assert tf(tmp_path) == ("4.46.0", "requirements.txt:1")


def test_generic_package_declared_or_installed(tmp_path):
    write(tmp_path, "requirements.txt", "peft==0.11.1\ndeepspeed>=0.14,<0.15\n")
    assert V.resolve_version("peft", tmp_path, use_installed=False) == ("0.11.1", "requirements.txt:1")
    assert V.resolve_version("deepspeed", tmp_path, use_installed=False) == ("0.14", "requirements.txt:2")
    assert V.resolve_version("bitsandbytes", tmp_path, use_installed=False) is None


def test_project_root_from_the_paths(tmp_path):
    write(tmp_path, "pyproject.toml", "[project]\nname='x'\n")
    write(tmp_path, "examples/a/train.py", "x = 1\n")
    write(tmp_path, "examples/b/run.sh", "python train.py\n")
    assert V.find_project_root([tmp_path / "examples/a/train.py", tmp_path / "examples/b"]) == tmp_path.resolve()
    assert V.find_project_root([tmp_path / "examples"]) == tmp_path.resolve()


def test_a_sub_project_that_does_not_name_the_package_runs_on_the_repositorys_pin(tmp_path):
    """Qwen's ``recipes/finetune/deepspeed/requirements.txt`` names deepspeed and peft: checking
    that folder targets the repository's ``transformers>=4.32.0,<4.38.0``, not whatever is
    installed; a sub-project that pins transformers itself wins; without a repository above
    (no ``.git``) nothing outside the project's folder is read."""
    write(tmp_path, ".git/HEAD", "ref: refs/heads/main\n")
    write(tmp_path, "requirements.txt", "transformers>=4.32.0,<4.38.0\n")
    write(tmp_path, "recipes/ft/requirements.txt", "deepspeed\npeft\n")
    sub = tmp_path / "recipes" / "ft"
    rv = V.resolve_transformers_version(None, sub, use_installed=False)
    assert V.find_project_root([sub]) == sub.resolve()
    assert rv.source == "../../requirements.txt:1" and rv.version.startswith("4.3")
    write(tmp_path, "recipes/ft/requirements.txt", "transformers==4.46.0\n")
    assert V.resolve_transformers_version(None, sub, use_installed=False).source == "requirements.txt:1"
    (tmp_path / ".git" / "HEAD").unlink()
    (tmp_path / ".git").rmdir()
    write(tmp_path, "recipes/ft/requirements.txt", "deepspeed\n")
    assert V.resolve_transformers_version(None, sub, use_installed=False).source == "newest known"


def test_trl_requires_matches_the_installed_trl():
    """``trl_requires.json`` (generated from the wheels' METADATA) says what the installed trl's
    metadata says about transformers."""
    import re

    try:
        installed = importlib.metadata.version("trl")
        reqs = importlib.metadata.requires("trl") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("trl is not installed")
    data = V._trl_requires()
    if installed not in data:
        pytest.skip(f"trl {installed} is not in the data")
    plain = [r for r in reqs if re.match(r"^transformers\b", r) and ";" not in r]
    spec = re.sub(r"^transformers\s*(\[[^\]]*\])?\s*", "", plain[0]).strip("() ") if plain else ""
    assert data[installed] == spec


def test_a_sub_project_with_its_own_transformers_pin_is_checked_on_it(tmp_path):
    """DeepSpeedExamples: each example folder pins its own transformers; checking the repository
    from its top judges each example on its own pin (also through the cache, which must see an
    edit of the sub-project's requirements.txt)."""
    import json

    from helpers import run_cli, write_files

    old = "from transformers import AdamW, Trainer\nTrainer(model=m, tokenizer=tok)\n"
    write_files(tmp_path, {
        "README.md": "examples\n",
        "apps/chat/requirements.txt": "datasets\ntransformers==4.33.3\n",
        "apps/chat/training/main.py": old,
        "other/main.py": old,
    })

    def found():
        out = run_cli("check", ".", "--format", "json", "--exit-zero", cwd=tmp_path)
        return sorted((d["path"], d["code"]) for d in json.loads(out.stdout) if d["code"] in ("TL605", "TL611"))

    assert found() == [("other/main.py", "TL605"), ("other/main.py", "TL611")]
    (tmp_path / "apps/chat/requirements.txt").write_text("datasets\ntransformers==5.0.0\n")
    got = found()
    assert ("apps/chat/training/main.py", "TL611") in got and ("other/main.py", "TL611") in got
    out = run_cli("check", ".", "--format", "json", "--exit-zero", "--no-cache", cwd=tmp_path)
    msgs = [d["message"] for d in json.loads(out.stdout) if d["path"] == "apps/chat/training/main.py"]
    assert msgs and all("apps/chat/requirements.txt:2" in m for m in msgs), msgs


def test_singular_requirement_txt_is_a_declaration(tmp_path):
    """princeton-nlp/LESS pins ``transformers==4.36.2`` in ``requirement.txt`` (singular), which its
    setup.py reads: that is the project's pin, before what is installed."""
    write(tmp_path, "requirement.txt", "peft==0.7.1\ntransformers==4.36.2\n")
    write(tmp_path, "setup.py", "from setuptools import setup\nsetup(name='less')\n")
    assert tf(tmp_path) == ("4.36.2", "requirement.txt:2")
    assert V.find_project_root([tmp_path / "less"]) is not None


def test_singular_requirement_txt_keeps_tokenizer_keyword_and_its_fix_unoffered(tmp_path):
    """The LESS pattern end to end: on its pin 4.36.2, ``Trainer(tokenizer=)`` is the right keyword
    (processing_class= came in 4.46), so no TL605 error and no safe fix that would break it;
    without the pin file the installed version judges it."""
    import json

    from helpers import run_cli, write_files

    write_files(tmp_path, {
        "requirement.txt": "transformers==4.36.2\n",
        "less/train/train.py": "from transformers import Trainer\ntrainer = Trainer(model=m, tokenizer=tok)\n",
    })
    out = run_cli("check", ".", "--format", "json", "--exit-zero", "--no-cache", cwd=tmp_path)
    assert [d for d in json.loads(out.stdout) if d["code"] == "TL605"] == []
    (tmp_path / "requirement.txt").unlink()
    out = run_cli("check", ".", "--format", "json", "--exit-zero", "--no-cache", cwd=tmp_path)
    assert [d["code"] for d in json.loads(out.stdout) if d["code"] == "TL605"] == ["TL605"]


def test_a_sub_package_setup_py_without_the_package_keeps_the_repositorys_oldest_version(tmp_path):
    """FlagEmbedding: research/visual_bge/setup.py installs torchvision, timm... but not
    transformers; the repository's setup.py allows transformers 4.44.2, which has no
    activation_checkpointing_enable, so the rename of gradient_checkpointing_enable is no safe
    fix there (it was offered as safe)."""
    import json

    from helpers import run_cli, write_files

    write_files(tmp_path, {
        "setup.py": "from setuptools import setup\nsetup(name='fe', install_requires=['transformers>=4.44.2'])\n",
        "research/vbge/setup.py": "from setuptools import setup\nsetup(name='vbge', install_requires=['timm'])\n",
        "research/vbge/vbge/hf_model.py": "from transformers import AutoModel\nm = AutoModel.from_pretrained('x')\n"
                                          "m.gradient_checkpointing_enable()\n",
    })
    out = run_cli("check", ".", "--format", "json", "--exit-zero", "--no-cache", "--transformers-version", "5.24.0",
                  cwd=tmp_path)
    found = [d for d in json.loads(out.stdout) if d["code"] == "TL609"]
    assert found and all(d["fix"]["applicability"] == "unsafe" for d in found), found
    assert "4.44.2" in found[0]["message"]
