"""pytest integration: kc's verdicts as ordinary test failures.

    def test_softmax_conforms():
        kc.assert_conforms(my_softmax, "KC-SOFTMAX-*", op="softmax")

A violation or error fails the test with kc's evidence: the verdict, the named
signature, the worst element and the repro line that reruns the case from a
shell. A run that judged nothing fails too (exit 4): a green must mean kc
judged something. pytest is not imported here; the failure is an
AssertionError, so any runner reports it.
"""

from __future__ import annotations

from typing import Any, Optional


class ConformanceError(AssertionError):
    """kc found a violation or an error (or judged nothing); .result holds the run."""

    def __init__(self, message: str, result: Any):
        super().__init__(message)
        self.result = result


def _describe(case) -> str:
    lines = [f"{case.contract} x {case.impl}: {case.verdict}"]
    if case.signatures:
        lines.append(f"  signature: {', '.join(case.signatures)}")
    if case.reason:
        lines.append(f"  reason: {case.reason}")
    ev = case.evidence or {}
    if ev.get("metric"):
        lines.append(f"  evidence: {ev.get('metric')} max {ev.get('max')} (tolerance: {ev.get('tolerance')}), "
                     f"{ev.get('failures')} of {ev.get('elements')} elements beyond it")
    worst = ev.get("worst")
    if worst:
        lines.append(f"  worst: {worst.get('output')}{worst.get('position')} = {worst.get('value')!r}, "
                     f"reference {worst.get('reference')!r} ({worst.get('config')})")
    for note in ev.get("notes", [])[:4]:
        lines.append(f"  note: {note}")
    if case.repro:
        lines.append(f"  repro: {case.repro}")
    return "\n".join(lines)


def describe(result) -> str:
    """Every violation and error of a kc.Result, as kc states it."""
    bad = result.failures()
    if not bad:
        return f"kc exited {result.exit_code}: {result.stderr.strip()}"
    return "\n".join(_describe(c) for c in bad)


def assert_conforms(fn: Any, contracts: Any = None, *, op: Optional[str] = None, **kwargs) -> Any:
    """Runs kc.check(contracts, impl=fn, op=op, ...); raises ConformanceError
    unless kc exits 0 (every judged case conforming). Returns the kc.Result."""
    import kc
    result = kc.check(contracts, impl=fn, op=op, **kwargs)
    if result.exit_code == kc.EXIT_NOTHING_JUDGED:
        verdicts = ", ".join(f"{c.contract} x {c.impl}: {c.verdict} ({c.reason})" for c in result.cases)
        raise ConformanceError(f"kc judged no case (exit 4): {verdicts or result.stderr.strip()}", result)
    if not result.ok:
        raise ConformanceError(f"kc: {len(result.failures())} case(s) not conforming\n" + describe(result), result)
    return result


def assert_violates(fn: Any, contracts: Any = None, *, signature: str, op: Optional[str] = None,
                    **kwargs) -> Any:
    """The converse, for tests of kc itself and of known-bad kernels: kc must
    find a violation whose signatures include `signature` (a prefix match:
    "PRECISION_FINGERPRINT" matches "PRECISION_FINGERPRINT(bf16)")."""
    import kc
    result = kc.check(contracts, impl=fn, op=op, **kwargs)
    hits = [c for c in result.cases if c.verdict == "violation" and any(s.startswith(signature) for s in c.signatures)]
    if not hits:
        seen = "\n".join(str(c) for c in result.cases) or result.stderr.strip()
        raise ConformanceError(f"expected a violation with signature {signature}; kc found:\n{seen}", result)
    return result


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "kc: a test that runs kc against an impl")


def _kc_check_fixture(record_property):
    """The `kc_check` fixture: assert_conforms that also records, for every
    case, `kc:CONTRACT:IMPL` = "verdict [signatures] repro" as a property of the
    test (pytest --junitxml writes them), passing or not."""

    def run(fn, contracts=None, *, op=None, **kwargs):
        from kc import ConformanceError as _Error
        try:
            result = assert_conforms(fn, contracts, op=op, **kwargs)
        except _Error as e:
            _record(record_property, e.result)
            raise
        _record(record_property, result)
        return result

    return run


def _record(record_property, result) -> None:
    for c in result.cases:
        sig = f" [{', '.join(c.signatures)}]" if c.signatures else ""
        record_property(f"kc:{c.contract}:{c.impl}", f"{c.verdict}{sig} {c.repro}".strip())


try:  # the fixture exists where pytest does; the rest of this module does not need it
    import pytest as _pytest

    kc_check = _pytest.fixture(name="kc_check")(_kc_check_fixture)
except ImportError:  # pragma: no cover
    pass
