"""whatif simulator: everything that produces measurements."""
