"""Shared pytest setup: the report header names the pyet under test; fixtures
several test files use."""

import os

import pytest

import pyet
from pyet._core import core as _plan
from pyet._kernels import parallel as _parallel


def pytest_report_header(config):
    # Shows whether the suite ran against an installed wheel or an editable build.
    return f"pyet {pyet.__version__} from {os.path.dirname(pyet.__file__)}"


@pytest.fixture
def threaded():
    """Force threads even on small inputs, and restore the settings after."""
    before = pyet.get_num_threads()
    pyet.set_num_threads(2)
    _parallel.set_min_per_thread(64)
    _plan.set_block_size(32)
    yield
    _plan.set_block_size(512)
    _parallel.set_min_per_thread(1 << 16)
    pyet.set_num_threads(before)
