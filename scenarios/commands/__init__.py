"""The glue of each CLI command: parse-level checks, one call into the library, what the terminal prints.

Commands never import studies or each other; what both need lives in ``render/`` or ``results/``.
"""
