"""Matmul impls over NumPy (C = alpha op(A) op(B) + beta C): C is both an input
and the output, and the config's trans_a, trans_b, alpha, beta come as keywords."""
import numpy as np


def _operands(A, B, trans_a, trans_b):
    return (A.T if trans_a == "T" else A), (B.T if trans_b == "T" else B)


def matmul_fp32(A, B, C, trans_a="N", trans_b="N", alpha=1.0, beta=0.0):
    a, b = _operands(A, B, trans_a, trans_b)
    acc = a.astype(np.float64) @ b.astype(np.float64)
    return (alpha * acc + (beta * C if beta != 0 else 0)).astype(np.float32)


def matmul_fp16_accumulator(A, B, C, trans_a="N", trans_b="N", alpha=1.0, beta=0.0):
    """The bug: every partial sum rounded to float16, while FP32 is declared."""
    a, b = _operands(A, B, trans_a, trans_b)
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=np.float16)
    for k in range(a.shape[1]):
        acc = (acc.astype(np.float32) + np.outer(a[:, k], b[k, :])).astype(np.float16)
    return (alpha * acc.astype(np.float32) + (beta * C if beta != 0 else 0)).astype(np.float32)
