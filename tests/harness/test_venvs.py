"""dabench.venvs: uv and its pip fallback each make a venv whose console script runs; a failed
install names its command; ``DABENCH_UV`` chooses the installer.

The installs come from PyPI (``tabulate``: pure Python, no dependencies, one console script):
no registry is a skip on a developer machine and a failure in CI, like tests/harness/third_party.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.environment import skip_unless_ci

from dabench.venvs import NO_UV, Installer, InstallError, find_uv

PACKAGE = "tabulate==0.10.0"
SCRIPT = "tabulate"


def _uv() -> str:
    uv = find_uv()
    if uv is None:
        skip_unless_ci("uv is not installed (the dev extra has it; .ci/run sets DABENCH_UV)")
        raise AssertionError("unreachable")
    return uv


def _installer(kind: str) -> Installer:
    return Installer(uv=_uv() if kind == "uv" else None)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["uv", "pip"])
def test_each_installer_makes_a_venv_whose_console_script_runs(kind: str, tmp_path: Path) -> None:
    installer = _installer(kind)
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "stale").write_text("left by an earlier install\n")
    try:
        python = installer.create_venv(venv, [PACKAGE])
    except InstallError as exc:
        skip_unless_ci(f"could not install {PACKAGE} with {kind}: {exc}")
    assert python == venv / "bin" / "python"
    assert not (venv / "stale").exists()  # the directory was made afresh
    assert (venv / "bin" / "pip").exists() == (kind == "pip")  # uv's venv has no pip
    out = subprocess.run(
        [str(venv / "bin" / SCRIPT), "-1", "-f", "plain"],
        input="name count\nalpha 3\n",
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["name", "count", "alpha", "3"]
    # bytecode compiled at install time by either installer (the same venv both ways)
    assert list((venv / "lib").glob("python3*/site-packages/tabulate/__pycache__/__init__.*.pyc"))


@pytest.mark.parametrize("kind", ["uv", "pip"])
def test_a_failed_install_names_the_command_and_its_output(kind: str, tmp_path: Path) -> None:
    """An invalid requirement fails before any registry is asked."""
    installer = _installer(kind)
    with pytest.raises(InstallError) as raised:
        installer.create_venv(tmp_path / "venv", ["tabulate=>>0.10"])
    message = str(raised.value)
    first = message.splitlines()[0]
    assert first.startswith(f"{installer.uv or (tmp_path / 'venv/bin/python')} ")
    assert "install" in first and "tabulate=>>0.10" in first and "failed (exit " in first
    assert "tabulate=>>0.10" in "\n".join(message.splitlines()[1:])  # the installer's own words


def test_an_interpreter_that_does_not_exist_is_named(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-python")
    with pytest.raises(InstallError, match=f"^{missing} -m venv .*: cannot run it"):
        Installer(uv=None).create_venv(tmp_path / "venv", [PACKAGE], python=missing)


def test_nothing_to_install_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="no requirements"):
        Installer(uv=None).install(tmp_path / "python", [])


def test_dabench_uv_chooses_the_installer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DABENCH_UV", NO_UV)
    assert find_uv() is None and Installer.detect().name == "pip"
    not_executable = tmp_path / "uv"
    not_executable.write_text("")
    monkeypatch.setenv("DABENCH_UV", str(not_executable))
    with pytest.raises(InstallError, match="is not an executable file"):
        find_uv()
    not_executable.chmod(0o755)
    assert find_uv() == str(not_executable)
    monkeypatch.delenv("DABENCH_UV")
    found = find_uv()
    assert found is None or os.access(found, os.X_OK)
