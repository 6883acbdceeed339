"""Softmax impls over NumPy for the kc Python tests: one honest, some with
deliberate defects kc must catch and name, some that misbehave as a process."""
import numpy as np


def softmax_stable(x):
    """Max-subtracted softmax, computed in FP64 and rounded once to FP32."""
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype)


def softmax_fp16(x):
    """The precision bug: the whole softmax evaluated in float16."""
    h = x.astype(np.float16)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def softmax_naive(x):
    """The range bug: no max subtraction, so exp overflows past x = 88.7."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)
        return e / e.sum(axis=1, keepdims=True)


def softmax_out(x, y):
    """Writes into kc's output buffer instead of returning."""
    y[...] = softmax_stable(x)


def softmax_stale(x, y):
    """Never writes its output: what kc's poisoned output buffer shows."""
    return None


# ---- impls that misbehave as a process: kc must turn each into a verdict.

def softmax_abort(x):
    import os
    os.abort()


def softmax_hang(x):
    import time
    time.sleep(3600)


def softmax_write_past_end(x, y):
    """Writes 4 bytes just past the end of kc's output buffer."""
    import ctypes
    y[...] = softmax_stable(x)
    ctypes.memset(y.ctypes.data + y.nbytes, 0x7f, 4)


def softmax_write_far_past_end(x, y):
    """Writes 1 MiB past the end of kc's output buffer."""
    import ctypes
    y[...] = softmax_stable(x)
    ctypes.memset(y.ctypes.data + y.nbytes, 0x7f, 1 << 20)


def softmax_raises(x):
    raise RuntimeError("this kernel refuses every input")
