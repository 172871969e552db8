"""whatif analysis engines: everything that analyses measurements (real or simulated)."""
