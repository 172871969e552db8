"""Engine and simulation results -> tables, figures and report sections, shared by commands and studies."""
