"""The memory hierarchy: caches, TLBs, page walks and prefetchers as one numba kernel over a state array."""
