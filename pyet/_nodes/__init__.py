"""Node families built on the core: products, reductions, softmax, views, NN and
spatial blocks; each module imports only the core and the kernels."""

from pyet._nodes import products  # noqa: F401
