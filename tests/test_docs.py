"""The documentation's API reference (docs/api.rst, read as text: no Sphinx
needed) lists every public name of pyet, and every public name has a docstring."""

import pathlib
import re

import pytest

import pyet

DOCS = pathlib.Path(__file__).parents[1] / "docs"


def _autosummary_names(text):
    names, inside = [], False
    for line in text.splitlines():
        if line.strip().startswith(".. autosummary::"):
            inside = True
            continue
        if inside:
            if not line.strip() or line.strip().startswith(":"):
                continue
            if not line.startswith("   "):
                inside = False
                continue
            names.append(line.strip())
    return names


def test_every_public_name_is_in_the_api_reference():
    api = DOCS / "api.rst"
    if not api.is_file():
        pytest.skip("docs/ not beside the tests")
    listed = _autosummary_names(api.read_text())
    assert len(listed) == len(set(listed)), "a name is listed twice"
    missing = sorted(set(pyet.__all__) - set(listed))
    assert not missing, f"public names missing from docs/api.rst: {missing}"
    stale = sorted(set(listed) - set(pyet.__all__))
    assert not stale, f"docs/api.rst lists names pyet does not export: {stale}"


def test_every_public_name_has_a_docstring():
    undocumented = [n for n in pyet.__all__ if not (getattr(pyet, n).__doc__ or "").strip()]
    assert not undocumented


def test_user_guide_pages_are_in_the_toctree():
    index = DOCS / "guide" / "index.rst"
    if not index.is_file():
        pytest.skip("docs/ not beside the tests")
    listed = set(re.findall(r"^   (\w+)$", index.read_text(), re.M))
    pages = {p.stem for p in (DOCS / "guide").glob("*.rst")} - {"index"}
    assert pages == listed
