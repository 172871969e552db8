"""Study kinds: one module per kind, each a class registered by name in :mod:`whatif.scenarios.registry`.

Studies never import each other or the command glue; what both need lives in ``render/`` (engine results
-> tables, figures, report sections) or ``results/`` (the results directory).
"""

# importing a study module registers its kind (whatif.scenarios.registry.register_study)
from whatif.scenarios.studies import (cachesim, capacity, flowgsp, hbench_gc, hbench_java, hbench_os,  # noqa: F401
                                      regression, similarity, simulate)
