"""Statistical instruction-stream synthesis: static program generation and the numba walker.

``Synthesizer(workload, isa, seed)`` builds (once per workload, ISA and seed) a static
program — functions of basic blocks with their branches, calls and memory instructions bound
to data streams, calibrated so that the expected dynamic stream has the described mix, branch
share and taken rate — and walks it, handing out :class:`simulator.isa.InstrBlock` chunks.
"""

from whatif.simulator.synth.program import StaticProgram, build_program, program_for
from whatif.simulator.synth.synthesizer import Synthesizer

__all__ = ["StaticProgram", "Synthesizer", "build_program", "program_for"]
