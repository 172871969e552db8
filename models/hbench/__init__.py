"""HBench (seed 003): the vector methodology of chapter 3 (:mod:`.vectors`: system vector · application
vector, ranks, ratios, what-ifs, speedups) and HBench:JGC (chapter 5): predict every garbage collection's
time from the collector's cost functions, measured by microbenchmarks, and the application's memory
behaviour, measured by a profiler.

Typical use::

    from whatif.models.hbench import GcCostModel, AppProfile, MicrobenchPlan

    plan = MicrobenchPlan().scaled(0.125)          # which microbenchmark runs to make
    costs = GcCostModel(copy_bandwidth=5e8).fit(microbench_table)   # Table 5-4
    print(costs.summary())
    prof = AppProfile.from_tables(gc_log, size_histogram, name="javac")
    res = costs.predict(prof)                      # Figure 5-9, Table 5-5
    print(res.summary()); res.plot_predicted_vs_actual()

Works the same on measured tables (see the column lists in :mod:`models.hbench.microbench` and
:mod:`models.hbench.profile`); nothing here imports the simulator.
"""

from whatif.models.hbench.analyzer import GcTimePredictor, PredictionResults, error_table
from whatif.models.hbench.costs import GcCostModel, GcCostResults, LinearFit
from whatif.models.hbench.microbench import TABLE_5_4_SIZES, MicrobenchPlan, normalise_microbench
from whatif.models.hbench.profile import AppProfile, read_table
from whatif.models.hbench.vector_files import read_vector_file, read_vectors, seed_vectors
from whatif.models.hbench.vectors import VectorModel, VectorResults, speedup

__all__ = ["AppProfile", "GcCostModel", "GcCostResults", "GcTimePredictor", "LinearFit", "MicrobenchPlan",
           "PredictionResults", "TABLE_5_4_SIZES", "VectorModel", "VectorResults", "error_table",
           "normalise_microbench", "read_table", "read_vector_file", "read_vectors", "seed_vectors", "speedup"]
