"""Sum impls over NumPy: one with a fixed order, one whose order changes per call."""
import numpy as np


def sum_fixed(x, out):
    out[...] = x.sum(dtype=np.float32)


def sum_shuffled(x, out):
    """Adds in a fresh random order on every call: run-to-run bits differ."""
    out[...] = x[np.random.permutation(x.shape[0])].sum(dtype=np.float32)
