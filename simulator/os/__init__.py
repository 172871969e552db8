"""Operating-system primitives on the processor models (seed 003 ch. 6): instruction streams, a kernel that
runs them on a core, lmbench-style microbenchmarks, and the SimPy web server built on them."""
