"""Shared pytest setup: the report header names the pyet under test; fixtures
several test files use."""

import os

import pytest

import pyet
from pyet import _plan


def pytest_report_header(config):
    # Shows whether the suite ran against an installed wheel or an editable build.
    return f"pyet {pyet.__version__} from {os.path.dirname(pyet.__file__)}"


@pytest.fixture
def threaded():
    """Force threads even on small inputs, and restore the settings after."""
    before = pyet.get_num_threads()
    pyet.set_num_threads(2)
    _plan.set_min_per_thread(64)
    _plan.set_block_size(32)
    yield
    _plan.set_block_size(512)
    _plan.set_min_per_thread(1 << 16)
    pyet.set_num_threads(before)
