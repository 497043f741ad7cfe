"""Compiled kernels: C headers and the Cython modules that run them (BLAS
products, NN and spatial blocks, thread settings)."""
