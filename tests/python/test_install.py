"""The documented install: pip from Debian, into a venv over the system packages."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_pip_install_into_a_venv(tmp_path):
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        pytest.skip(f"{sys.executable} has no pip (Debian: python3-pip)")
    if subprocess.run([sys.executable, "-c", "import ensurepip"], capture_output=True).returncode != 0:
        pytest.skip(f"{sys.executable} cannot make a venv (Debian: python3-venv)")
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "python"), src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                                     "__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    pip = subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index", str(src)],
                         capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    out = subprocess.run([py, "-c", "import kc, sys; r = kc.lint(sys.argv[1]); print(kc.__file__); print(r.summary)",
                          os.path.join(ROOT, "contracts", "blas", "KC-SOFTMAX-01.kc")],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert str(venv) in out.stdout.splitlines()[0]
    assert out.stdout.splitlines()[1] == "1 contracts: 1 executable, 0 descriptive"
