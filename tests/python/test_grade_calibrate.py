"""kc.grade and kc.calibrate: the CLI's reports and tables, as Python objects."""
import importlib.util
import json
import os
import sys

import pytest

import kc
import softmax_impls as s


def test_grade_writes_the_reports(contracts, tmp_path):
    r = kc.grade(contracts("blas/KC-SOFTMAX-01.kc"), impl=[s.softmax_stable, s.softmax_fp16], op="softmax",
                 declares="accumulator = FP64", out=str(tmp_path))
    assert r.exit_code == 1  # one violation
    assert {c.impl: c.verdict for c in r.cases} == {"py.softmax_stable": "conforming", "py.softmax_fp16": "violation"}
    for f in ("report.json", "report.junit.xml", "report.md", "report.html", "trace.jsonl", "record.json"):
        assert (tmp_path / f).is_file(), f
    assert json.loads((tmp_path / "report.json").read_text()) == r.report
    assert "py.softmax_fp16" in r.stdout  # the matrix


def test_calibrate_separates_the_trio(contracts):
    r = kc.calibrate(contracts("blas/KC-SOFTMAX-01.kc"))
    assert r.exit_code == 0, r.table + r.stderr
    assert "KC-SOFTMAX-01" in r.table


def test_impl_module_under_tmp_runs_from_a_staged_copy(contracts, tmp_path):
    # kc's workers have a private /tmp: a module there is copied where they can read it.
    if not os.path.realpath(str(tmp_path)).startswith("/tmp/"):
        pytest.skip("pytest's tmp_path is not under /tmp here")
    mod = tmp_path / "tmp_impl.py"
    mod.write_text("import numpy as np\n\n"
                   "def softmax(x):\n"
                   "    e = np.exp(x - x.max(axis=1, keepdims=True))\n"
                   "    return e / e.sum(axis=1, keepdims=True)\n")
    spec = importlib.util.spec_from_file_location("tmp_impl", mod)
    m = importlib.util.module_from_spec(spec)
    sys.modules["tmp_impl"] = m
    try:
        spec.loader.exec_module(m)
        r = kc.check(contracts("blas/KC-SOFTMAX-01.kc"), impl=m.softmax, op="softmax", declares="accumulator = FP64")
        assert [c.verdict for c in r.cases] == ["conforming"], r.stdout + r.stderr
    finally:
        del sys.modules["tmp_impl"]
