#!/usr/bin/env python3
"""The unit tests the sanitizer run did not pass, as a ctest -I selection.

scripts/test.sh runs every unit test once: under ASan + UBSan where it can,
and in the optimised `ci` build otherwise (a test the sanitizer run leaves out
by name, one that skips itself there, such as the dlmopen'd library copies
ASan cannot follow, or one that exists only in the ci build, such as the
Eigen variants). This prints `0,0,0,N,...`, the numbers of the ci build's
`unit` tests that did not pass in the sanitizer run's JUnit report, for
`ctest -I`; nothing when there are none.

Usage: unit-remainder.py SANITIZER_JUNIT.xml CI_BUILD_DIR
"""
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

# gtest_discover_tests names a value-parameterized test "Suite/Test.Name/param
# # GetParam() = ...", where the value may print as the bytes of an object,
# pointers included: the part before it is the test's name in both builds.
PARAM_SUFFIX = "  # GetParam() = "


def key(name):
    return name.split(PARAM_SUFFIX, 1)[0]


def passed_under_sanitizers(junit_path):
    passed = set()
    for case in ET.parse(junit_path).getroot().iter("testcase"):
        if case.get("status") == "run" and case.find("failure") is None and case.find("skipped") is None:
            passed.add(key(case.get("name")))
    return passed


def unit_tests(build_dir):
    """(number, name) of every `unit` test of the build."""
    out = subprocess.run(["ctest", "--test-dir", build_dir, "-N", "-L", "unit"],
                         check=True, capture_output=True, text=True).stdout
    return [(int(m.group(1)), m.group(2)) for m in re.finditer(r"^\s*Test\s+#(\d+): (.*)$", out, re.M)]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    passed = passed_under_sanitizers(sys.argv[1])
    if not passed:
        sys.exit("unit-remainder: no test passed in " + sys.argv[1] + "; refusing to count every unit test as run")
    tests = unit_tests(sys.argv[2])
    if not tests:
        sys.exit("unit-remainder: no unit tests in " + sys.argv[2])
    rest = [number for number, name in tests if key(name) not in passed]
    if rest:
        print("0,0,0," + ",".join(str(n) for n in rest))


if __name__ == "__main__":
    main()
