"""torch CPU impls and a torch.library custom op checked by kc."""
import pytest

torch = pytest.importorskip("torch", reason="python3-torch is not installed")

import kc  # noqa: E402
import torch_impls as t  # noqa: E402

DECL = {"accumulator": "FP32"}


def test_torch_softmax_conforms(contracts):
    kc.assert_conforms(t.softmax_torch, contracts("blas/KC-SOFTMAX-01.kc"), op="softmax", declares=DECL,
                       kind="torch")


def test_torch_bf16_softmax_is_caught(contracts):
    r = kc.check(contracts("blas/KC-SOFTMAX-01.kc"), impl=t.softmax_torch_bf16, op="softmax", declares=DECL,
                 kind="torch")
    (case,) = r.cases
    assert case.verdict == "violation", case
    assert "ACCUMULATOR_PRECISION(bf16)" in case.signatures, case


def test_custom_op_by_qualified_name(contracts):
    good = kc.impl(torch.ops.kctest.softmax, op="softmax", declares=DECL, module="torch_impls")
    bad = kc.impl(torch.ops.kctest.softmax_bf16, op="softmax", declares=DECL, module="torch_impls")
    assert good.name == "py.kctest_softmax" and good.kind == "torch"
    r = kc.check(contracts("blas/KC-SOFTMAX-01.kc"), impl=[good, bad])
    verdicts = {c.impl: c for c in r.cases}
    assert verdicts["py.kctest_softmax"].verdict == "conforming", verdicts["py.kctest_softmax"]
    assert verdicts["py.kctest_softmax_bf16"].verdict == "violation"
    assert "PRECISION_FINGERPRINT(bf16)" in verdicts["py.kctest_softmax_bf16"].signatures
