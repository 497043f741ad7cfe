"""Sphinx configuration: ``python -m sphinx -W -b html docs docs/_build``.

The API reference is generated from the docstrings (numpydoc style) of the
installed pyet; build it from outside the source folder's shadow, e.g. after
``pip install .`` (or an editable install) and ``pip install --group docs``.
"""

import pyet

project = "pyet"
author = "pyet developers"
copyright = "2026, pyet developers"  # noqa: A001  (Sphinx's name)
release = version = pyet.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
]
autosummary_generate = True
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False   # methods are listed in the class pages
numpydoc_class_members_toctree = False
templates_path = ["_templates"]
exclude_patterns = ["_build"]
html_static_path = ["_static"]
html_theme = "pydata_sphinx_theme"
html_theme_options = {"navigation_with_keys": False}
html_title = f"pyet {release}"
