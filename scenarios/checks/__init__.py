"""Ground-truth checks behind ``whatif validate``: the registry and one module per subsystem."""
