"""kc.assert_conforms under pytest: a violation is an ordinary test failure
whose message carries kc's signature, evidence and repro line, in the JUnit XML too."""
import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))


def test_violation_is_a_pytest_failure_with_evidence(tmp_path):
    junit = tmp_path / "junit.xml"
    example = os.path.join(HERE, "examples", "softmax_example_test.py")
    # The plugin is loaded by -p alone: with kc installed (an egg-info beside
    # the sources, or a venv), its pytest11 entry point would register it twice.
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "kc.testing", example,
                          f"--junitxml={junit}"], capture_output=True, text=True, cwd=str(tmp_path), env=env)
    assert run.returncode == 1, run.stdout + run.stderr  # 1: tests failed (not a crash, not a usage error)
    assert "1 failed, 2 passed" in run.stdout
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["test_softmax_conforms"].find("failure") is None
    failure = cases["test_softmax_half_conforms"].find("failure")
    assert failure is not None
    text = failure.get("message", "") + (failure.text or "")
    assert "ConformanceError" in text
    assert "KC-SOFTMAX-01 x py.softmax_half: violation" in text
    assert "signature: ACCUMULATOR_PRECISION(fp16)" in text
    assert "worst: y(row " in text
    assert "repro: kc check " in text and "--impl py.softmax_half" in text and "--plugin " in text
    props = {p.get("name"): p.get("value") for p in cases["test_with_fixture"].iter("property")}
    assert props["kc:KC-SOFTMAX-01:py.softmax"] == "conforming", props  # kc gives no repro for a pass


def test_script_without_main_guard(tmp_path):
    """The README's example: a script whose top level calls kc.check."""
    run = subprocess.run([sys.executable, os.path.join(HERE, "examples", "script_example.py")],
                         capture_output=True, text=True, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "violation ACCUMULATOR_PRECISION(fp16)", run.stdout
    repro = shlex.split(lines[1])
    assert repro[0] == "kc" and "--plugin" in repro
    # The repro line reruns the case from a shell, with no Python session.
    import kc
    again = subprocess.run([kc.find_kc(), *repro[1:]], capture_output=True, text=True)
    assert again.returncode == 1 and "ACCUMULATOR_PRECISION(fp16)" in again.stdout, again.stdout + again.stderr
