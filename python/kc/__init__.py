"""kc for Python: check kernels, NumPy functions and torch ops against kc's contracts.

A thin shell over kc. Every verdict is the kc engine's: kc.check() runs the kc
program (the C++ engine, in its own process) and reads back the JSON report the
CLI writes; nothing is judged here. A Python callable under test runs in kc's
isolated worker processes (libkc_python.so embeds an interpreter there), never
in the interpreter that called kc: a crash, hang, write past a buffer or stale
output is a verdict, not a dead interpreter. docs/python.md has the details.

    import numpy as np, kc

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    r = kc.check("KC-SOFTMAX-01", impl=softmax, op="softmax")
    print(r.cases[0].verdict, r.cases[0].signatures, r.cases[0].repro)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Callable, Iterable, Optional, Sequence, Union

__all__ = [
    "Unsupported", "KcError", "Impl", "impl", "Case", "Result", "LintFinding", "LintResult",
    "CalibrationResult", "check", "grade", "calibrate", "lint", "assert_conforms", "assert_violates",
    "ConformanceError",
    "find_kc", "find_plugin",
]

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_INTERNAL, EXIT_NOTHING_JUDGED = 0, 1, 2, 3, 4


class Unsupported(Exception):
    """Raise from an impl for a call outside its shape class or dtypes (KC_UNSUPPORTED)."""


class KcError(Exception):
    """kc refused the request (exit 2: usage or contract error) or failed (exit 3)."""

    def __init__(self, message: str, exit_code: int, command: Sequence[str]):
        super().__init__(message)
        self.exit_code = exit_code
        self.command = list(command)


# ---------------------------------------------------------------- locating kc

def _repo_root() -> Optional[str]:
    """The kc checkout: the one this file lies in, or the one it was installed from."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if not os.path.isfile(os.path.join(root, "include", "kc", "kc_plugin.h")):
        try:
            from kc._checkout import REPO_ROOT as root
        except ImportError:
            return None
    return root if os.path.isfile(os.path.join(root, "include", "kc", "kc_plugin.h")) else None


def find_kc() -> str:
    """The kc program: $KC_BIN, else `kc` on PATH, else a build in this checkout."""
    env = os.environ.get("KC_BIN")
    if env:
        return env
    on_path = shutil.which("kc")
    if on_path:
        return on_path
    root = _repo_root()
    if root:
        for preset in ("release", "ci", "dev"):
            cand = os.path.join(root, "build", preset, "bin", "kc")
            if os.access(cand, os.X_OK):
                return cand
    raise KcError("kc program not found: set KC_BIN, put kc on PATH, or build it (docs/python.md)", EXIT_USAGE, [])


def find_plugin() -> str:
    """libkc_python.so: $KC_PYTHON_PLUGIN, else beside kc (BINDIR/../lib in a
    build tree, BINDIR/../lib/kc in an installed prefix)."""
    env = os.environ.get("KC_PYTHON_PLUGIN")
    if env:
        return env
    kc_bin = os.path.realpath(find_kc())
    prefix = os.path.dirname(os.path.dirname(kc_bin))
    for cand in (os.path.join(prefix, "lib", "kc", "libkc_python.so"), os.path.join(prefix, "lib", "libkc_python.so")):
        if os.path.isfile(cand):
            return cand
    raise KcError(f"libkc_python.so not found beside {kc_bin} (set KC_PYTHON_PLUGIN; it is built with python3-dev, "
                  "docs/python.md)", EXIT_USAGE, [])


# ---------------------------------------------------------------- impls

@dataclasses.dataclass(frozen=True)
class Impl:
    """A Python callable registered as a kc impl, with its op and declarations."""

    name: str
    op: str
    dtypes: str
    declares: str
    description: str
    module: str
    file: str
    qualname: str
    kind: str  # "numpy" or "torch"


def _declares_text(declares: Union[None, str, dict]) -> str:
    if declares is None:
        return ""
    if isinstance(declares, dict):
        return ", ".join(f"{k} = {v}" for k, v in declares.items())
    return str(declares)


def _torch_op_name(fn: Any) -> Optional[str]:
    """'ns.name' for torch.ops.ns.name (an OpOverloadPacket), else None."""
    qual = getattr(fn, "_qualified_op_name", None)
    if isinstance(qual, str) and "::" in qual and type(fn).__module__.startswith("torch"):
        return qual.replace("::", ".")
    return None


def impl(fn: Optional[Callable] = None, *, op: str, dtypes: Union[str, Iterable[str]] = "FP32",
         declares: Union[None, str, dict] = None, name: Optional[str] = None, description: str = "",
         kind: Optional[str] = None, module: Optional[str] = None):
    """Registers `fn` as an impl of `op` (also usable as a decorator).

    fn gets the op's input tensors positionally (NumPy arrays, or torch CPU
    tensors with kind="torch") and returns the output(s); or it takes the output
    by name (`y=`) or as `out=` and writes into it. Config parameters (rows,
    cols, ...) are passed as keywords it names. kc runs it in another process,
    so it must be reachable by import as module.qualname (a module-level
    function, or torch.ops.ns.name with `module` the module that registers it).
    """
    if fn is None:
        return lambda f: impl(f, op=op, dtypes=dtypes, declares=declares, name=name, description=description,
                              kind=kind, module=module)
    if isinstance(fn, Impl):
        return fn
    dtype_text = dtypes if isinstance(dtypes, str) else ",".join(dtypes)
    torch_op = _torch_op_name(fn)
    if torch_op:
        if not module:
            raise ValueError(f"torch.ops.{torch_op}: pass module= the module whose import registers the op")
        mod = sys.modules.get(module)
        file = getattr(mod, "__file__", "") or ""
        qualname = "torch.ops." + torch_op
        kind = kind or "torch"
        default_name = "py." + torch_op.replace(".", "_")
    else:
        module = module or getattr(fn, "__module__", None)
        qualname = getattr(fn, "__qualname__", "")
        if not module or not qualname or "<locals>" in qualname or "<lambda>" in qualname:
            raise ValueError(f"{fn!r} is not reachable by import (kc runs impls in worker processes): "
                             "define it at module level")
        mod = sys.modules.get(module)
        obj = mod
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
        if obj is not fn:
            raise ValueError(f"{module}.{qualname} does not name {fn!r}: define it at module level")
        file = getattr(mod, "__file__", "") or ""
        if module == "__main__" and not file:
            raise ValueError("a function typed at the interactive prompt cannot run in a worker: put it in a file")
        kind = kind or "numpy"
        default_name = "py." + getattr(fn, "__name__", "impl")
    if kind not in ("numpy", "torch"):
        raise ValueError(f"kind must be 'numpy' or 'torch', not {kind!r}")
    text = dict(name=name or default_name, op=op, dtypes=dtype_text, declares=_declares_text(declares),
                description=description or f"Python {kind} impl {module}.{qualname}", module=module,
                file=os.path.abspath(file) if file else "", qualname=qualname, kind=kind)
    for key, value in text.items():
        if "\t" in value or "\n" in value:
            raise ValueError(f"impl {key} may not contain a tab or a newline: {value!r}")
    return Impl(**text)


def _workers_see(path: str) -> bool:
    """Whether kc's workers can read `path` where it is: not under /tmp (each
    worker has a private one) and, when kc runs as root, readable by nobody."""
    return not _under_tmp(path) and (os.geteuid() != 0 or _nobody_can_read(path))


_STAGE_LIMIT = 2000  # files: a directory bigger than this is not copied


def _stage(directory: str, required: bool = True) -> Optional[str]:
    """A copy of `directory`'s Python sources where the workers can read them.

    A module under /tmp (a checkout or a test's scratch), or one user nobody
    cannot read when kc runs as root, is invisible to kc's workers. Its
    directory's top-level .py files and package subdirectories (.py files
    only) are copied into the manifest cache, under a name from the
    directory's path, and the worker imports the copy. Returns the copy's path;
    a directory with more than _STAGE_LIMIT such files is an error when it
    holds an impl's module (`required`), else None (left off the path).
    """
    real = os.path.realpath(directory)
    dest = os.path.join(_cache_dir(), "staged", hashlib.sha256(real.encode()).hexdigest()[:16])
    copied = 0
    for root, dirs, files in os.walk(real):
        rel = os.path.relpath(root, real)
        if rel != "." and not os.path.isfile(os.path.join(root, "__init__.py")):
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        out = dest if rel == "." else os.path.join(dest, rel)
        os.makedirs(out, mode=0o755, exist_ok=True)
        os.chmod(out, 0o755)
        for f in files:
            if not f.endswith(".py"):
                continue
            copied += 1
            if copied > _STAGE_LIMIT:
                if not required:
                    return None
                raise KcError(f"{real}: more than {_STAGE_LIMIT} Python files to copy where kc's workers can read "
                              "them; put the impl's module in a directory every user can read, outside /tmp",
                              EXIT_USAGE, [])
            with open(os.path.join(root, f), "rb") as src:
                _write_atomic(os.path.join(out, f), src.read())
    return dest


def _visible(path: str, staged: dict, required: bool = True) -> Optional[str]:
    """`path` (a directory), or its staged copy when the workers cannot see it."""
    if _workers_see(path):
        return path
    if path not in staged:
        staged[path] = _stage(path, required)
    return staged[path]


def _under_tmp(path: str) -> bool:
    real = os.path.realpath(path)
    return real == "/tmp" or real.startswith("/tmp/")


def _nobody_can_read(path: str) -> bool:
    """Whether user nobody can read `path`: kc's workers (and the probe that
    reads a plugin's table) become nobody when kc runs as root."""
    real = os.path.realpath(path)
    try:
        if not os.stat(real).st_mode & 0o004:
            return False
        d = os.path.dirname(real)
        while True:
            if not os.stat(d).st_mode & 0o001:
                return False
            if d == "/":
                return True
            d = os.path.dirname(d)
    except OSError:
        return False


def _cache_dir() -> str:
    d = os.environ.get("KC_PYTHON_CACHE")
    if not d and os.geteuid() == 0:
        d = "/var/cache/kc/python"  # root's home is not readable by the workers' user, nobody
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "kc", "python")
    if _under_tmp(d):
        raise KcError(f"KC_PYTHON_CACHE={d} is under /tmp, which kc's probe and worker processes do not see "
                      "(each has a private /tmp): choose another directory", EXIT_USAGE, [])
    os.makedirs(d, mode=0o755, exist_ok=True)
    if os.geteuid() == 0 and not _nobody_can_read(d):
        raise KcError(f"the manifest cache {d} is not readable by user nobody, which kc's probe and workers "
                      "become when kc runs as root: set KC_PYTHON_CACHE to a directory every user can read",
                      EXIT_USAGE, [])
    return d


def _write_atomic(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _plugin_for(impls: Sequence[Impl]) -> str:
    """A copy of libkc_python.so with the manifest of `impls` beside it.

    Named by a hash of its contents, so a repro line's `--plugin PATH` keeps
    naming these impls (docs/python.md).
    """
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # The caller's sys.path ("" is its working directory), so the worker
    # imports the impl's module, and what it imports, from where the caller did.
    # Directories the workers cannot read (under /tmp, or closed to nobody)
    # are replaced by staged copies of their Python sources (_stage).
    staged: dict = {}
    paths = [here] + [os.path.abspath(p or os.getcwd()) for p in sys.path if os.path.isdir(p or ".") and p != here]
    visible = []
    for p in paths:
        v = _visible(p, staged, required=p == here or any(os.path.dirname(i.file) == p for i in impls))
        if v:
            visible.append(v)
    lines = ["kc-python-manifest 1"] + [f"path\t{os.path.abspath(p)}" for p in visible]
    for i in impls:
        file = i.file
        if file and not _workers_see(file):
            file = os.path.join(_visible(os.path.dirname(file), staged), os.path.basename(file))
        lines.append("\t".join(["impl", i.name, i.op, i.dtypes, i.declares, i.description, i.module, file,
                                i.qualname, i.kind]))
    manifest = ("\n".join(lines) + "\n").encode()
    plugin = find_plugin()
    with open(plugin, "rb") as f:
        lib = f.read()
    m = re.search(rb"kc-python-embeds (\d+)\.(\d+)", lib)
    if m and (int(m[1]), int(m[2])) != sys.version_info[:2]:
        raise KcError(f"{plugin} embeds Python {int(m[1])}.{int(m[2])}, this is {sys.version_info[0]}."
                      f"{sys.version_info[1]}: the worker could not import what this interpreter imports "
                      "(build kc with -DKC_PYTHON_EXECUTABLE=this python, docs/python.md)", EXIT_USAGE, [])
    digest = hashlib.sha256(manifest + hashlib.sha256(lib).digest()).hexdigest()[:16]
    base = os.path.join(_cache_dir(), f"kcpy-{digest}")
    if not os.path.isfile(base + ".manifest"):
        _write_atomic(base + ".manifest", manifest)
    if not os.path.isfile(base + ".so"):
        _write_atomic(base + ".so", lib)
    return base + ".so"


# ---------------------------------------------------------------- results

@dataclasses.dataclass
class Case:
    """One verdict of the kc report (contract x impl), as the CLI's JSON has it."""

    contract: str
    impl: str
    verdict: str
    reason: str
    signatures: list
    evidence: dict = dataclasses.field(repr=False)
    repro: str = dataclasses.field(repr=False)
    seed: str = dataclasses.field(repr=False)
    backend: str = dataclasses.field(repr=False)
    raw: dict = dataclasses.field(repr=False)

    @property
    def ok(self) -> bool:
        return self.verdict in ("conforming", "not_applicable", "skipped")

    @classmethod
    def from_json(cls, d: dict) -> "Case":
        return cls(contract=d.get("contract", ""), impl=d.get("impl", ""), verdict=d.get("verdict", ""),
                   reason=d.get("reason", ""), signatures=list(d.get("signatures", [])),
                   evidence=d.get("evidence", {}), repro=d.get("repro", ""), seed=d.get("seed", ""),
                   backend=d.get("backend", ""), raw=d)

    def __str__(self) -> str:
        sig = ", ".join(self.signatures)
        return f"{self.contract} x {self.impl}: {self.verdict}" + (f" [{sig}]" if sig else "") + \
            (f": {self.reason}" if self.reason else "")


@dataclasses.dataclass
class Result:
    """A kc check or grade run: its verdicts, exit code and the CLI's own JSON."""

    command: list
    exit_code: int
    cases: list
    json: str
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        """Exit 0: every judged case conforming (and at least one judged)."""
        return self.exit_code == EXIT_OK

    @property
    def report(self) -> dict:
        return json.loads(self.json) if self.json else {}

    def failures(self) -> list:
        return [c for c in self.cases if c.verdict in ("violation", "error")]

    def __iter__(self):
        return iter(self.cases)


@dataclasses.dataclass
class LintFinding:
    file: str
    line: int
    column: int
    contract: str
    clause: str
    message: str


@dataclasses.dataclass
class LintResult:
    command: list
    exit_code: int
    findings: list      # clauses that keep a contract descriptive (kc lint's stdout lines)
    diagnostics: str    # parse errors and warnings, rendered with file:line:col and a caret
    summary: str        # "N contracts: E executable, D descriptive"
    stdout: str

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK


@dataclasses.dataclass
class CalibrationResult:
    command: list
    exit_code: int
    table: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK


# ---------------------------------------------------------------- running kc

def _not_in_worker_import() -> None:
    if "kc._worker" in sys.modules:
        # In a worker, importing the impl's module: its top-level kc run stops the import here.
        sys.modules["kc._worker"].refuse_run_while_importing()


def _run(args: Sequence[str], timeout: Optional[float] = None) -> subprocess.CompletedProcess:
    _not_in_worker_import()
    cmd = [find_kc(), *args]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _listify(x) -> list:
    if x is None:
        return []
    if isinstance(x, (str, os.PathLike)):
        return [os.fspath(x)]
    return [os.fspath(v) for v in x]


def _selection(contracts, contract, impl_arg, impls, op, dtypes, declares, kind, backend):
    """Command-line words for the paths, contract globs and impls asked for."""
    _not_in_worker_import()
    args, paths, ids = [], [], _listify(contract)
    for c in _listify(contracts):
        (paths if os.path.exists(c) else ids).append(c)
    py_impls = []
    for f in (impl_arg if isinstance(impl_arg, (list, tuple)) else [impl_arg] if impl_arg is not None else []):
        if isinstance(f, str):
            impls = _listify(impls) + [f]  # a kc impl name or glob (openblas.*, calib.softmax_stable)
            continue
        if not isinstance(f, Impl):
            if op is None:
                raise ValueError("kc.check(impl=callable) needs op= (the kc op it implements, `kc list ops`)")
            f = impl(f, op=op, dtypes=dtypes or "FP32", declares=declares, kind=kind)
        py_impls.append(f)
    for i in ids:
        args += ["--contract", i]
    globs = _listify(impls)
    if py_impls:
        names = [i.name for i in py_impls]
        if len(set(names)) != len(names):
            raise ValueError(f"two impls share a name: {names}")
        args += ["--plugin", _plugin_for(py_impls)]
        globs += names
        if not backend and not _listify(impls):
            backend = ["plugin"]  # only the Python impls: other backends are not even probed
    for g in globs:
        args += ["--impl", g]
    for b in _listify(backend):
        args += ["--backend", b]
    return paths, args


def _options(seed, samples, timeout, memory_limit, jobs, isolate, extra):
    args = []
    if seed is not None:
        args += ["--seed", str(seed)]
    if samples is not None:
        args += ["--samples", str(samples)]
    if timeout is not None:
        args += ["--timeout", str(timeout)]
    if memory_limit is not None:
        args += ["--memory-limit", str(memory_limit)]
    if jobs is not None:
        args += ["--jobs", str(jobs)]
    if isolate is not None:
        args += ["--isolate", isolate]
    return args + list(extra)


def _raise_for(proc: subprocess.CompletedProcess, cmd: list) -> None:
    if proc.returncode in (EXIT_USAGE, EXIT_INTERNAL) or proc.returncode < 0:
        raise KcError(f"kc exited {proc.returncode}: {proc.stderr.strip()}", proc.returncode, cmd)


def check(contracts=None, impl: Any = None, *, contract=None, impls=None, op: Optional[str] = None,
          dtypes=None, declares=None, kind: Optional[str] = None, backend=None, seed=None, samples=None,
          timeout=None, memory_limit=None, jobs=None, isolate: Optional[str] = None, extra: Sequence[str] = (),
          process_timeout: Optional[float] = None) -> Result:
    """`kc check`: run contracts against impls; returns the verdicts.

    contracts: contract files or directories, or contract id globs
    ("KC-SOFTMAX-*") looked up in the standard suite. impl: a Python callable
    (with op=, dtypes=, declares=), a kc.Impl, a kc impl name or glob, or a list.
    Raises KcError on exit 2 (a usage or contract error; kc says which) or 3.
    """
    paths, sel = _selection(contracts, contract, impl, impls, op, dtypes, declares, kind, backend)
    cmd = ["check", *paths, *sel, *_options(seed, samples, timeout, memory_limit, jobs, isolate, extra),
           "--format", "json"]
    proc = _run(cmd, process_timeout)
    _raise_for(proc, cmd)
    report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    cases = [Case.from_json(c) for c in report.get("cases", [])]
    return Result(command=[find_kc(), *cmd], exit_code=proc.returncode, cases=cases, json=proc.stdout, stdout=proc.stdout,
                  stderr=proc.stderr)


def grade(contracts=None, impl: Any = None, *, out: Optional[str] = None, contract=None, impls=None,
          op: Optional[str] = None, dtypes=None, declares=None, kind: Optional[str] = None, backend=None, seed=None,
          samples=None, timeout=None, memory_limit=None, jobs=None, extra: Sequence[str] = (),
          process_timeout: Optional[float] = None) -> Result:
    """`kc grade`: the conformance matrix and report files in `out` (a new
    temporary directory when not given); Result.json is out/report.json and
    Result.stdout the matrix."""
    paths, sel = _selection(contracts, contract, impl, impls, op, dtypes, declares, kind, backend)
    out = out or tempfile.mkdtemp(prefix="kc-grade-")
    cmd = ["grade", *paths, *sel, *_options(seed, samples, timeout, memory_limit, jobs, None, extra), "--out", out,
           "--no-color"]
    proc = _run(cmd, process_timeout)
    _raise_for(proc, cmd)
    text = ""
    report_path = os.path.join(out, "report.json")
    if os.path.isfile(report_path):
        with open(report_path) as f:
            text = f.read()
    cases = [Case.from_json(c) for c in (json.loads(text).get("cases", []) if text else [])]
    return Result(command=[find_kc(), *cmd], exit_code=proc.returncode, cases=cases, json=text, stdout=proc.stdout,
                  stderr=proc.stderr)


def calibrate(contracts=None, *, contract=None, seed=None, samples=None, jobs=None, extra: Sequence[str] = (),
              process_timeout: Optional[float] = None) -> CalibrationResult:
    """`kc calibrate`: every selected contract separates its trio (baseline, bad, good)."""
    paths, sel = _selection(contracts, contract, None, None, None, None, None, None, None)
    cmd = ["calibrate", *paths, *sel, *_options(seed, samples, None, None, jobs, None, extra), "--no-color"]
    proc = _run(cmd, process_timeout)
    _raise_for(proc, cmd)
    return CalibrationResult(command=[find_kc(), *cmd], exit_code=proc.returncode, table=proc.stdout,
                             stderr=proc.stderr)


_FINDING = re.compile(r"^(.*?):(\d+):(\d+): (\S+) (\S+): (.*)$")


def lint(paths, *, strict: bool = False) -> LintResult:
    """`kc lint`: parse contracts; findings say which clauses keep a contract descriptive.

    A malformed file is not an exception: exit_code 2 and `diagnostics` with
    file:line:col, the line, a caret and the nearest known word.
    """
    cmd = ["lint", *_listify(paths)] + (["--strict"] if strict else [])
    proc = _run(cmd)
    if proc.returncode == EXIT_INTERNAL or proc.returncode < 0:
        raise KcError(f"kc exited {proc.returncode}: {proc.stderr.strip()}", proc.returncode, cmd)
    findings, summary = [], ""
    for line in proc.stdout.splitlines():
        m = _FINDING.match(line)
        if m:
            findings.append(LintFinding(m[1], int(m[2]), int(m[3]), m[4], m[5], m[6]))
        elif line.strip():
            summary = line.strip()
    return LintResult(command=[find_kc(), *cmd], exit_code=proc.returncode, findings=findings,
                      diagnostics=proc.stderr, summary=summary, stdout=proc.stdout)


from kc.testing import ConformanceError, assert_conforms, assert_violates  # noqa: E402  (re-exported)
