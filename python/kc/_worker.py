"""The worker side of a Python impl: runs inside kc's worker process.

libkc_python.so (backends/python) starts an interpreter in the worker on the
first call and calls run() below for every kernel call. The arrays handed to
the callable are views of the worker's guarded buffers: what the callable
writes there is what kc judges, and a write past their ends is kc's to catch.
Nothing here judges anything; it only moves tensors between kc's call and the
callable.
"""

import importlib
import importlib.util
import inspect
import os
import sys
import traceback

KC_OK, KC_RAISED, KC_UNSUPPORTED = 0, 1, 2
ROLE_IN, ROLE_OUT, ROLE_INOUT = 0, 1, 2

# kc_dtype -> NumPy dtype name of the bits kc stores (include/kc/kc_plugin.h):
# BF16 and FP8 travel as their bit patterns.
_NUMPY_DTYPES = {
    0: "float64", 1: "float32", 2: "float32", 3: "uint16", 4: "float16",
    5: "uint8", 6: "uint8", 7: "int32", 8: "int64",
}
_BF16 = 3

_callables = {}


class _LoadError(Exception):
    pass


class StopModule(BaseException):
    """Raised by kc.check() and the other runs when a worker imports a module
    that calls them at its top level (a script without a __main__ guard): the
    import stops there, keeping what the module defined before that call."""


_importing = False


def refuse_run_while_importing():
    if _importing:
        raise StopModule()


def _exec_module(spec, name):
    global _importing
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    _importing = True
    try:
        spec.loader.exec_module(mod)
    except StopModule:
        pass
    finally:
        _importing = False
    return mod


def _import(module):
    global _importing
    _importing = True
    try:
        return importlib.import_module(module)
    except StopModule:
        return sys.modules[module]
    finally:
        _importing = False


def _resolve(module, file, qualname):
    key = (module, file, qualname)
    if key in _callables:
        return _callables[key]
    try:
        if module == "__main__":
            # A script's functions: import the file under another name, so its
            # `if __name__ == "__main__":` block does not run again here.
            mod = _exec_module(importlib.util.spec_from_file_location("__kc_main__", file), "__kc_main__")
        else:
            try:
                mod = _import(module)
            except ModuleNotFoundError as e:
                if e.name != module.split(".")[0] or not file:
                    raise
                # Not on the path the caller had (a test file pytest imported
                # by its own rules): load the file the caller loaded.
                mod = _exec_module(importlib.util.spec_from_file_location(module, file), module)
        if qualname.startswith("torch.ops."):
            import torch
            obj = torch.ops
            parts = qualname.split(".")[2:]
        else:
            obj = mod
            parts = qualname.split(".")
        for part in parts:
            obj = getattr(obj, part)
    except Exception as e:  # noqa: BLE001 - any failure to load is reported whole
        raise _LoadError(f"cannot load {module}:{qualname} ({file}): {type(e).__name__}: {e}") from e
    _callables[key] = obj
    return obj


def _number(text):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _wants(fn, names):
    """Which of `names` fn takes as keyword arguments (all with **kwargs)."""
    schema = getattr(getattr(fn, "default", None), "_schema", None)
    if schema is not None:  # a torch.ops operator: its schema names its arguments
        return {a.name for a in schema.arguments} & set(names)
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return set()
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return set(names)
    return {n for n in names if n in params and params[n].kind in (params[n].POSITIONAL_OR_KEYWORD,
                                                                  params[n].KEYWORD_ONLY)}


def _arrays(tensors, kind):
    import numpy as np
    out = []
    for name, dtype, role, shape, strides, buf in tensors:
        dt = np.dtype(_NUMPY_DTYPES[dtype])
        arr = np.ndarray(shape, dtype=dt, buffer=buf, strides=tuple(s * dt.itemsize for s in strides))
        if kind == "torch":
            import torch
            if dtype == _BF16:
                arr = torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16)
            else:
                arr = torch.from_numpy(arr)
        out.append((name, role, arr))
    return out


def _store(dest, value, kind, name):
    """Copies a returned value into an output buffer, unless it is that buffer."""
    if kind == "torch":
        import torch
        if not isinstance(value, torch.Tensor):
            value = torch.as_tensor(value)
        value = value.detach().cpu()
        if tuple(value.shape) != tuple(dest.shape):
            raise ValueError(f"returned {name} has shape {tuple(value.shape)}, kc expects {tuple(dest.shape)}")
        if value.data_ptr() != dest.data_ptr():
            dest.copy_(value)
        return
    import numpy as np
    value = np.asarray(value)
    if value.shape != dest.shape:
        raise ValueError(f"returned {name} has shape {value.shape}, kc expects {dest.shape}")
    if not np.shares_memory(value, dest):
        np.copyto(dest, value, casting="same_kind")


def _call(fn, kind, tensors, attrs):
    views = _arrays(tensors, kind)
    ins = [a for _, role, a in views if role in (ROLE_IN, ROLE_INOUT)]
    outs = [(n, a) for n, role, a in views if role in (ROLE_OUT, ROLE_INOUT)]
    out_names = [n for n, _ in outs]
    # An in-out tensor (matmul's C) is already a positional input: only pure
    # outputs may also be taken by name.
    pure_outs = [n for n, role, _ in views if role == ROLE_OUT]
    wanted = _wants(fn, list(attrs) + pure_outs + ["out"])
    kwargs = {k: _number(v) for k, v in attrs.items() if k in wanted}
    for n, a in outs:
        if n in wanted and n in pure_outs:
            kwargs[n] = a
    if "out" in wanted and "out" not in attrs and len(outs) == 1:
        kwargs["out"] = outs[0][1]
    result = fn(*ins, **kwargs)
    if result is None:
        return
    results = result if isinstance(result, (tuple, list)) and len(outs) > 1 else (result,)
    if len(results) != len(outs):
        raise ValueError(f"returned {len(results)} values for {len(outs)} outputs ({', '.join(out_names)})")
    for (n, dest), value in zip(outs, results):
        _store(dest, value, kind, n)


def run(name, module, file, qualname, kind, call):
    """One kernel call: (status, message) for libkc_python.so."""
    _op, tensors, attrs = call
    try:
        fn = _resolve(module, file, qualname)
    except _LoadError as e:
        # Not the kernel's refusal but a broken impl: end the worker, so kc
        # records an error verdict (CRASH(exit 70)) with this text as evidence.
        sys.stderr.write(f"kc: impl {name}: {e}\n{traceback.format_exc()}")
        sys.stderr.flush()
        os._exit(70)
    try:
        from kc import Unsupported
    except Exception:  # noqa: BLE001 - the package is on sys.path; be safe anyway
        Unsupported = ()
    try:
        _call(fn, kind, tensors, attrs)
    except Unsupported as e:
        return (KC_UNSUPPORTED, str(e) or "unsupported")
    except Exception as e:  # noqa: BLE001 - the callable raised: kc judges that
        return (KC_RAISED, f"{type(e).__name__}: {e}")
    return (KC_OK, "")
