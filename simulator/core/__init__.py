"""The core timing model: branch predictors, the numba timing kernel, the ``Core`` driver, the generic
counter vocabulary and microbenchmark streams."""

from whatif.simulator.core.counters import CAUSES, COUNTER_NAMES, COUNTERS, cause_names
from whatif.simulator.core.model import Core
from whatif.simulator.core.predictors import PREDICTORS, PredictorConfig

__all__ = ["CAUSES", "COUNTERS", "COUNTER_NAMES", "Core", "PREDICTORS", "PredictorConfig", "cause_names"]
