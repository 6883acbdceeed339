"""NumPy softmax impls checked by kc in isolated workers."""
import json
import shlex
import subprocess

import pytest

import kc
import softmax_impls as s

DECL = {"accumulator": "FP64", "determinism": "BITWISE"}


def test_lint_counts_the_contract(contracts):
    r = kc.lint(contracts("blas/KC-SOFTMAX-01.kc"))
    assert r.exit_code == 0
    assert r.summary == "1 contracts: 1 executable, 0 descriptive"
    assert r.findings == []


def test_lint_reports_file_line_col(tmp_path):
    bad = tmp_path / "bad.kc"
    bad.write_text("contract X-1 {\n  scope softmx\n}\n")
    r = kc.lint(str(bad))
    assert r.exit_code == 2
    assert f"{bad}:2:" in r.diagnostics


def test_honest_softmax_conforms(contracts):
    r = kc.assert_conforms(s.softmax_stable, contracts("blas/KC-SOFTMAX-01.kc"), op="softmax", declares=DECL)
    (case,) = r.cases
    assert case.verdict == "conforming" and case.impl == "py.softmax_stable"
    assert case.evidence["metric"] == "bound_ratio" and 0 < case.evidence["max"] <= 1


def test_fp16_softmax_is_caught_and_named(contracts):
    r = kc.assert_violates(s.softmax_fp16, contracts("blas/KC-SOFTMAX-01.kc"), op="softmax", declares=DECL,
                           signature="ACCUMULATOR_PRECISION(fp16)")
    (case,) = r.cases
    assert case.evidence["max"] > 1
    assert "--plugin" in case.repro


def test_unstable_softmax_overflows(contracts):
    kc.assert_violates(s.softmax_naive, contracts("classes/C-PRC-02.kc"), op="softmax", declares=DECL,
                       signature="OVERFLOW_TO_INF")
    kc.assert_conforms(s.softmax_stable, contracts("classes/C-PRC-02.kc"), op="softmax", declares=DECL)


def test_out_parameter_conforms(contracts):
    kc.assert_conforms(s.softmax_out, contracts("blas/KC-SOFTMAX-01.kc"), op="softmax", declares=DECL)


def test_stale_output_is_caught(contracts):
    r = kc.check(contracts("blas/KC-SOFTMAX-01.kc"), impl=s.softmax_stale, op="softmax", declares=DECL)
    (case,) = r.cases
    assert case.verdict == "violation" and case.signatures[0] == "OUTPUT_NOT_WRITTEN", case
    assert r.exit_code == 1


@pytest.mark.parametrize("fn,signature", [
    (s.softmax_abort, "CRASH(SIGABRT)"),
    (s.softmax_write_past_end, "GUARD_OVERWRITTEN(y, after)"),
    (s.softmax_write_far_past_end, "GUARD_OVERWRITTEN(y, after)"),  # a fault in the guard page
])
def test_process_failures_are_verdicts(contracts, fn, signature):
    r = kc.check(contracts("blas/KC-SOFTMAX-01.kc"), impl=fn, op="softmax", declares=DECL, samples=1)
    (case,) = r.cases
    assert case.verdict == "error" and signature in case.signatures, case
    assert r.exit_code == 1


def test_hang_is_a_timeout(contracts):
    r = kc.check(contracts("blas/KC-SOFTMAX-01.kc"), impl=s.softmax_hang, op="softmax", declares=DECL, samples=1,
                 timeout=2)
    (case,) = r.cases
    assert case.verdict == "error" and "TIMEOUT(2s)" in case.signatures, case


def test_exception_is_an_unexpected_raise(contracts):
    r = kc.check(contracts("blas/KC-SOFTMAX-01.kc"), impl=s.softmax_raises, op="softmax", declares=DECL, samples=1)
    (case,) = r.cases
    assert case.verdict == "violation" and "UNEXPECTED_RAISE" in case.signatures, case
    assert "RuntimeError: this kernel refuses every input" in case.reason + json.dumps(case.evidence)


def test_json_is_the_clis_and_repro_reruns(contracts):
    r = kc.check(contracts("blas/KC-SOFTMAX-01.kc"), impl=s.softmax_fp16, op="softmax", declares=DECL)
    cli = subprocess.run(r.command, stdout=subprocess.PIPE, text=True)
    assert json.loads(cli.stdout)["cases"][0]["verdict"] == r.report["cases"][0]["verdict"] == "violation"
    (case,) = r.cases
    words = shlex.split(case.repro)
    assert words[0] == "kc"
    rerun = subprocess.run([kc.find_kc(), *words[1:], "--format", "json"], stdout=subprocess.PIPE, text=True)
    again = json.loads(rerun.stdout)["cases"][0]
    assert again["verdict"] == "violation" and again["signatures"][0] == case.signatures[0]


def test_closure_is_refused():
    def local(x):
        return x
    with pytest.raises(ValueError, match="module level"):
        kc.impl(local, op="softmax")


def test_unknown_contract_is_a_usage_error():
    with pytest.raises(kc.KcError) as e:
        kc.check("KC-NO-SUCH-*", impl=s.softmax_stable, op="softmax")
    assert e.value.exit_code == 2


def test_impl_that_cannot_load_is_an_error_with_its_traceback(contracts):
    broken = kc.Impl(name="py.broken", op="softmax", dtypes="FP32", declares="", description="names no function",
                     module="softmax_impls", file="", qualname="no_such_function", kind="numpy")
    r = kc.check(contracts("blas/KC-SOFTMAX-01.kc"), impl=broken, samples=1)
    (case,) = r.cases
    assert case.verdict == "error" and case.signatures == ["CRASH(exit 70)"], case
    notes = "\n".join(case.evidence["notes"])
    assert "cannot load softmax_impls:no_such_function" in notes and "AttributeError" in notes, notes


def test_contract_id_and_builtin_impl_names():
    """Contract ids select from the standard suite; strings name kc's own impls."""
    r = kc.check("KC-SOFTMAX-01", impl=["calib.softmax_stable", s.softmax_fp16], op="softmax", declares=DECL)
    verdicts = {c.impl: c.verdict for c in r.cases}
    assert verdicts == {"calib.softmax_stable": "conforming", "py.softmax_fp16": "violation"}, verdicts
    assert all(c.contract == "KC-SOFTMAX-01" for c in r.cases)


def test_another_python_version_is_refused(monkeypatch):
    """The worker embeds the Python libkc_python.so was built for; a caller of
    another version would have its modules imported by the wrong one."""
    monkeypatch.setattr(kc.sys, "version_info", (3, 2, 0))
    with pytest.raises(kc.KcError, match="embeds Python [0-9]+[.][0-9]+, this is 3[.]2"):
        kc.check("KC-SOFTMAX-01", impl=s.softmax_stable, op="softmax")
