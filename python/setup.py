"""Records which kc checkout the package was installed from, so an installed
`import kc` finds that checkout's build (build/{release,ci,dev}/bin/kc) without
KC_BIN. Everything else is in pyproject.toml."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self):
        super().run()
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        target = os.path.join(self.build_lib, "kc", "_checkout.py")
        with open(target, "w") as f:
            f.write(f"# written by python/setup.py at install time\nREPO_ROOT = {root!r}\n")


setup(cmdclass={"build_py": BuildPy})
