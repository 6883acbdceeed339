"""A script with no __main__ guard (the README's example): the worker imports
it to find softmax_half, and the import stops at the script's kc.check call."""
import os

import numpy as np

import kc

CONTRACT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "contracts", "blas",
                        "KC-SOFTMAX-01.kc")


def softmax_half(x):
    h = x.astype(np.float16)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


r = kc.check(CONTRACT, impl=softmax_half, op="softmax", declares="accumulator = FP32")
c = r.cases[0]
print(c.verdict, c.signatures[0])
print(c.repro)
