"""What a user's pytest file looks like: one test passes, one fails with kc's
evidence. test_pytest.py runs this file in a pytest of its own (the outer run
ignores this folder) and reads its JUnit XML."""
import os

import numpy as np

import kc

CONTRACT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "contracts", "blas", "KC-SOFTMAX-01.kc")


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_half(x):
    h = x.astype(np.float16)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def test_softmax_conforms():
    kc.assert_conforms(softmax, CONTRACT, op="softmax", declares="accumulator = FP32")


def test_softmax_half_conforms():
    kc.assert_conforms(softmax_half, CONTRACT, op="softmax", declares="accumulator = FP32")


def test_with_fixture(kc_check):
    """The kc_check fixture (pytest -p kc.testing, or installed: automatic)."""
    kc_check(softmax, CONTRACT, op="softmax", declares="accumulator = FP32")
