"""Packages installed without their declared dependencies: a pip user is told the one command
that installs them, and `make install` does not print pip's conflict list about them."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from tooluse.envs import environment_registry
from tooluse.errors import MissingDependencyError

ROOT = Path(__file__).resolve().parents[2]


def _requirements(monkeypatch, *requirements: str) -> None:
    monkeypatch.setattr(metadata, "requires", lambda name: list(requirements))


def _missing_verifiers(monkeypatch) -> str:
    monkeypatch.setitem(sys.modules, "verifiers", None)
    with pytest.raises(MissingDependencyError) as caught:
        environment_registry.get(name="anything", adapter="verifiers")
    return str(caught.value)


def test_verifiers_missing_with_its_extra_installed_names_the_no_deps_step(monkeypatch):
    _requirements(monkeypatch, 'pytest>=8; extra == "verifiers"', "pydantic>=2")
    assert _missing_verifiers(monkeypatch) == (
        "verifiers is not installed; install it with: pip install --no-deps 'verifiers==0.1.14'"
    )


def test_verifiers_missing_without_its_extra_names_one_command_for_both(monkeypatch):
    _requirements(monkeypatch, 'absent-dependency-xyz>=1; extra == "verifiers"')
    assert _missing_verifiers(monkeypatch) == (
        "verifiers is not installed; install it with: pip install 'tooluse[verifiers]' && "
        "pip install --no-deps 'verifiers==0.1.14'"
    )


def test_openenv_missing_without_tooluse_metadata_names_one_command(monkeypatch):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "requires", not_installed)
    monkeypatch.setitem(sys.modules, "openenv.core.generic_client", None)
    with pytest.raises(MissingDependencyError) as caught:
        environment_registry.get(name="guess", adapter="openenv", base_url="http://127.0.0.1:9")
    assert str(caught.value) == (
        "openenv-core is not installed; install it with: pip install 'tooluse[openenv]' && "
        "pip install --no-deps 'openenv-core==0.3.0'"
    )


def test_gem_extra_installs_gem_itself():
    line = re.search(r"^gem = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    assert line is not None
    assert '"gem-llm==0.1.0"' in line.group(1)


# -- make install ---------------------------------------------------------------------------


def _wheel(directory: Path, name: str, requires: tuple[str, ...] = ()) -> Path:
    """A minimal pure-Python wheel, built here (no index, no build backend)."""
    info = f"{name}-1.0.dist-info"
    files = {
        f"{name}/__init__.py": "",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    path = directory / f"{name}-1.0-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
            digest = hashlib.sha256(text.encode()).digest()
            encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            record.append(f"{member},sha256={encoded},{len(text.encode())}")
        archive.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return path


def _make_install_pip_lines() -> list[str]:
    done = subprocess.run(
        ["make", "-n", "-B", "install"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [line for line in done.stdout.splitlines() if re.search(r"-m pip install ", line)]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_install_keeps_pip_conflict_lists_about_no_deps_packages_out(tmp_path):
    lines = _make_install_pip_lines()
    steps = [line for line in lines if "--upgrade pip" not in line and "llama-cpp" not in line]
    assert len(steps) >= 5
    flags = {re.search(r"install --quiet (\S+)", line).group(1) for line in steps}  # type: ignore[union-attr]
    assert flags == {"--no-warn-conflicts"}

    # what that flag does to a later install once a package went in without its dependencies
    needy = _wheel(tmp_path, "needy", ("absent-dependency-xyz", "other"))
    other = _wheel(tmp_path, "other")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "v")], check=True)
    pip = [sys.executable, "-m", "pip", "--python", str(tmp_path / "v" / "bin" / "python")]
    quiet = ["install", "--quiet", "--no-index", "--disable-pip-version-check"]

    def install(*args: str) -> str:
        done = subprocess.run([*pip, *quiet, *args], capture_output=True, text=True, check=True)
        return done.stdout + done.stderr

    install("--no-deps", str(needy))
    assert "needy 1.0 requires absent-dependency-xyz" in install(str(other))
    again = install(*sorted(flags), "--force-reinstall", str(other))
    assert "absent-dependency-xyz" not in again and "conflicts" not in again


def test_make_install_says_in_one_line_why():
    text = (ROOT / "Makefile").read_text()
    assert re.search(r"go in without their.*\n.*declared dependencies .*conflict warnings", text)
