"""Declarations decide what a Python impl is held to: determinism (C-ORD-02)."""
import kc
import reduce_impls as r


def test_bitwise_declaration_is_held(contracts):
    bitwise = {"accumulator": "FP32", "determinism": "BITWISE"}
    kc.assert_conforms(r.sum_fixed, contracts("classes/C-ORD-02.kc"), op="sum", declares=bitwise)
    res = kc.assert_violates(r.sum_shuffled, contracts("classes/C-ORD-02.kc"), op="sum", declares=bitwise,
                             signature="NONDETERMINISTIC(")
    assert res.cases[0].evidence["metric"] == "mismatched_runs"


def test_contract_does_not_apply_without_the_promise(contracts):
    res = kc.check(contracts("classes/C-ORD-02.kc"), impl=r.sum_shuffled, op="sum",
                   declares={"accumulator": "FP32", "determinism": "NONE"})
    (case,) = res.cases
    assert case.verdict == "not_applicable", case
    assert res.exit_code == 4  # nothing judged: never a green
