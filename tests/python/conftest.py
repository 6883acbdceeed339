"""Shared set-up of the kc Python tests: where the contracts are."""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def contracts():
    """Path of a contract file of the standard suite."""
    return lambda rel: os.path.join(ROOT, "contracts", rel)


# examples/ holds a user's test file with a test that must fail; test_pytest.py
# runs it in a pytest of its own.
collect_ignore = ["examples"]
