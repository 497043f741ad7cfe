"""Node families built on the core: reductions, softmax, views, NN and spatial
blocks.  Each module imports only the core and the kernels; its special nodes
carry a ``Special`` kernel object that the core's engine calls."""
