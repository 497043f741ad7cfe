"""Shared pytest setup: the report header names the pyet under test."""

import os

import pyet


def pytest_report_header(config):
    # Shows whether the suite ran against an installed wheel or an editable build.
    return f"pyet {pyet.__version__} from {os.path.dirname(pyet.__file__)}"
