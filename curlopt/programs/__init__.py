"""The ε-tight programs as backend-neutral data: blocks and rows, the occupancy, optimistic (L1 and box), safe and
least-violation programs, the episodic (per-step occupancy and extended optimistic) and discounted programs, their
supports (which successors a program's kernel entries and joint variables exist for), the tightness schedule, the
LP form of a program, and policy extraction.

Nothing here imports a solver, a backend, an agent or an experiment.
"""

from __future__ import annotations

from .blocks import MAX_PROGRAM_BYTES, LinearRows, Program, VariableBlock, check_program_size
from .discounted import DiscountedOccupancyProgram
from .episodic import CONFIDENCE_SETS, EpisodicExtendedProgram, EpisodicOccupancyProgram, episodic_support
from .lp import LPForm, piece_rows
from .occupancy import OccupancyProgram
from .optimistic import RADII, BoxOptimisticProgram, JointProgram, OptimisticProgram, box_radius, l1_radius
from .policy import (
    PER_STEP_TOLERANCE,
    REACH_MAX_ITERATIONS,
    REACH_TOLERANCE,
    UNREACHED_FILLS,
    VISIT_TOLERANCE,
    ReachFill,
    extract_policy,
    per_step_feasible,
    policy_from_occupancy,
    reach_fill,
    unreached_states,
)
from .safe import LeastViolationProgram, SafeProgram
from .support import Support, check_counts, check_kernel
from .tightness import EPSILON_MAX, TIGHTNESS_CONSTANT_MAX, tightness

__all__ = [
    "VariableBlock",
    "LinearRows",
    "Program",
    "MAX_PROGRAM_BYTES",
    "check_program_size",
    "Support",
    "check_kernel",
    "check_counts",
    "tightness",
    "EPSILON_MAX",
    "TIGHTNESS_CONSTANT_MAX",
    "OccupancyProgram",
    "EpisodicOccupancyProgram",
    "EpisodicExtendedProgram",
    "CONFIDENCE_SETS",
    "episodic_support",
    "DiscountedOccupancyProgram",
    "JointProgram",
    "OptimisticProgram",
    "l1_radius",
    "RADII",
    "BoxOptimisticProgram",
    "box_radius",
    "SafeProgram",
    "LeastViolationProgram",
    "LPForm",
    "piece_rows",
    "policy_from_occupancy",
    "extract_policy",
    "unreached_states",
    "UNREACHED_FILLS",
    "VISIT_TOLERANCE",
    "per_step_feasible",
    "reach_fill",
    "ReachFill",
    "REACH_TOLERANCE",
    "REACH_MAX_ITERATIONS",
    "PER_STEP_TOLERANCE",
]
