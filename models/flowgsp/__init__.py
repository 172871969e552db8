"""FlowGSP (seed 001): mining execution flow graphs for frequent and costly attribute sequences.

See ``models/flowgsp/README.md`` for the semantics, the file formats and where they depart from the
seed's pseudo-code.  Profiles of simulated hardware come from ``whatif profile`` (the z10's core model
sampled instruction by instruction); :mod:`.synthetic` draws its attributes and is only a fixture of the
engine's tests, the planted-sequence check and the mining benchmark.
"""

from whatif.models.flowgsp.engine import FlowGSP, Progress, count_candidates
from whatif.models.flowgsp.formats import parse_json, read_json, read_profile, to_json_text, write_json
from whatif.models.flowgsp.graph import EFG
from whatif.models.flowgsp.profile_db import efg_from_tables, read_sqlite, read_tables, write_tables
from whatif.models.flowgsp.results import FlowGSPResults, GenerationStats, SequenceSupport

__all__ = ["EFG", "FlowGSP", "FlowGSPResults", "GenerationStats", "Progress", "SequenceSupport",
           "count_candidates", "efg_from_tables", "parse_json", "read_json", "read_profile", "read_sqlite",
           "read_tables", "to_json_text", "write_json", "write_tables"]
