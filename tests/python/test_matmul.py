"""A NumPy matmul: an in-out tensor (C) and config keywords (trans_a, alpha, ...)."""
import kc
import matmul_impls as m

FP32_ACC = {"accumulator": "FP32"}


def test_fp32_matmul_conforms(contracts):
    kc.assert_conforms(m.matmul_fp32, contracts("classes/C-PRC-01.kc"), op="matmul", declares=FP32_ACC)


def test_fp16_accumulator_is_named_saturation(contracts):
    r = kc.assert_violates(m.matmul_fp16_accumulator, contracts("classes/C-PRC-01.kc"), op="matmul",
                           declares=FP32_ACC, signature="SATURATION(65504)")
    assert "fp16" in r.cases[0].reason
