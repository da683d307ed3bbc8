"""The registry of backends: names to classes, imported only when used."""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import BackendError
from ..models.cmdp import CMDP
from ..models.episodic import EpisodicCMDP
from ..programs.blocks import Program
from ..programs.episodic import EpisodicExtendedProgram, EpisodicOccupancyProgram
from ..programs.occupancy import OccupancyProgram
from ..programs.optimistic import BoxOptimisticProgram, OptimisticProgram
from ..utilities.library import Utility
from .base import Backend, set_backend_finder
from .options import refuse_unknown

__all__ = [
    "register_backend", "get_backend", "backend_names", "installed_backends", "backends_accepting",
    "choose_backend", "resolve_backend", "auto_candidates", "backend_class", "auto_backend", "auto_takes", "kernel_entries",
    "reach_depth", "large_shallow_chain", "COLUMNS_FROM_STATES", "SHALLOW_DEPTH", "COLUMNS_FROM_ENTRIES", "OPTIMISTIC_COLUMNS",
    "episode_entries", "EPISODIC_COLUMNS_FROM_ENTRIES", "EPISODIC_CONIC_COLUMNS_FROM_ENTRIES", "EPISODIC_PROGRAMS",
]

# name -> "module:Class" (imported lazily so that naming a backend never imports its solver)
_BUILTIN = {
    "highs": "curlopt.backends.highs.backend:HighsBackend",
    "cvxpy": "curlopt.backends.cvxpy:CvxpyBackend",
    "pyomo": "curlopt.backends.pyomo.backend:PyomoBackend",
    # the worked example of docs/extending.md; never the ``auto`` choice (see ``auto_choice``)
    "scipy": "curlopt.backends.scipy:ScipyBackend",
    # UC-CURL's optimistic program by column generation (same optimal value as highs); never the ``auto`` choice
    "highs-columns": "curlopt.backends.highs.columns:ColumnsBackend",
    # UCRL-CMDP's box program (and UC-CURL's) by column generation (same optimal value as highs); never ``auto``
    "highs-box-columns": "curlopt.backends.highs.box_columns:BoxColumnsBackend",
    # occupancy programs by column generation with an MDP solver inside (for large kernels); never the ``auto`` choice
    "mdp-columns": "curlopt.backends.mdp.backend:MdpColumnsBackend",
}
_REGISTRY: dict[str, str | type[Backend]] = dict(_BUILTIN)


def register_backend(name: str, backend: type[Backend] | str) -> None:
    """Register a backend class (or a ``"module:Class"`` path) under ``name``."""
    if not isinstance(name, str) or not name:
        raise BackendError(f"a backend name must be a non-empty string, got {name!r}.")
    _REGISTRY[name] = backend


def backend_class(name: str) -> type[Backend]:
    """The class registered as ``name`` (imports its module, not its solver)."""
    try:
        entry = _REGISTRY[name]
    except KeyError:
        raise BackendError(f"unknown backend {name!r}; known backends: {', '.join(backend_names())}.") from None
    if isinstance(entry, str):
        module, _, attribute = entry.partition(":")
        try:
            loaded: type[Backend] = getattr(importlib.import_module(module), attribute)
        except ImportError as exc:  # the backend module itself is missing: a broken install
            raise BackendError(f"backend {name!r} could not be loaded ({exc}).") from exc
        _REGISTRY[name] = entry = loaded
    return entry


def backend_names() -> list[str]:
    """Every registered backend name, installed or not."""
    return list(_REGISTRY)


def installed_backends() -> list[str]:
    """Names of the backends whose solver packages are installed.

    A registered backend whose module cannot be loaded is left out with a warning.
    """
    names = []
    for name in _REGISTRY:
        try:
            if backend_class(name).is_installed():
                names.append(name)
        except BackendError as exc:
            warnings.warn(str(exc), RuntimeWarning, stacklevel=2)
    return names


def backends_accepting(utility: Utility) -> list[str]:
    """Installed backends that can express ``utility``."""
    return [name for name in installed_backends() if backend_class(name).accepts(utility)]


def get_backend(backend: str | Backend = "highs", **options: Any) -> Backend:
    """Return a backend instance from a registry name (with ``options``) or pass an instance through.

    Raises
    ------
    BackendError
        For an unknown name (the message lists the known ones).
    BackendOptionError
        For a keyword the backend does not take (the message names it and lists those it takes), a value
        its declaration refuses (:attr:`Backend.OPTIONS`), or solver settings its solver refuses (each
        backend tries them when it is built).
    """
    if isinstance(backend, Backend):
        if options:
            raise BackendError("options can only be given with a backend name, not with a backend instance.")
        return backend
    if not isinstance(backend, str):
        raise BackendError(f"backend must be a registry name or a Backend instance, got {type(backend).__name__}.")
    cls = backend_class(backend)
    check_keywords(backend, cls, options)
    return cls(**options)


def check_keywords(name: str, factory: Callable[..., Any], options: dict[str, Any]) -> None:
    """Raise :class:`BackendOptionError` naming the keywords ``factory`` does not take (before calling it)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # no signature to read: the constructor will say
        return
    parameters = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    takes = [n for n, p in parameters.items()
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    refuse_unknown(name, takes, options)


def auto_candidates() -> list[str]:
    """Installed backends ``auto`` may choose, in registry order.

    A backend class that sets ``auto_choice = False`` (:attr:`Backend.auto_choice`; e.g. ``scipy``, which does
    what ``highs`` does without its hot start) is left out: it is used only when named.
    """
    return [name for name in installed_backends() if backend_class(name).auto_choice]


#: ``auto`` takes ``mdp-columns`` for a program it compiles itself (the occupancy program: the optimum, PS-CURL; safe
#: mode's programs) from this many states on, when the chain is shallow (:data:`SHALLOW_DEPTH`). Measured
#: (benchmarks/bench_auto.py, docs/guide/solvers.md): random kernels with 5 successors a row, A = 4, optimum on
#: ``highs`` 0.39 s at S = 600, 1.7 s at 1,000, 4.9 s at 2,000, 28 s at 3,000, on ``mdp-columns`` 0.03-0.18 s; with a
#: sum of logs ``cvxpy`` 67 s at S = 300 and 8.5 s at 1,000, ``mdp-columns`` 0.06-0.35 s. Below it both take
#: hundredths of a second and the whole program stays (every paper-size model has at most 21 states)
COLUMNS_FROM_STATES = 200
#: a chain is *shallow* when breadth-first search from state 0 reaches every state it reaches within this many steps
#: (:func:`reach_depth`): value iteration then carries values across it in few sweeps. Measured: random sparse
#: kernels have depth 3-5 up to S = 3,000; the queue's depth is its buffer (300 at buffer 300: 0.35 s on
#: ``mdp-columns`` against 0.04 s on ``highs``; 1,000: 4.0 s against 0.08 s)
SHALLOW_DEPTH = 16
#: ``auto`` takes column generation for UC-CURL's and UCRL-CMDP's optimistic programs with LP-representable utilities
#: on a kernel of this many entries (:func:`kernel_entries`) or more, except on a large shallow chain stored sparse.
#: Measured (benchmarks/bench_box.py, benchmarks/README.md): at the paper's sizes neither route is faster throughout
#: (whole UC-CURL runs on the queue (6,16) and the scheduler's kernel (16,2) take 0.7-1.4 times ``highs``'s time with
#: ``highs-columns``); from about 1,000 entries on, column generation is faster (per re-solve 1.1-1.6× at (12,8),
#: 1.3-3× at (20,5), 4-5× at (30,10), 13× at (60,10)). On sparse random kernels it is not (bench_auto.py, runs of
#: 60,000 steps at S = 1,000, 5 successors a row: UC-CURL's epochs 0.83 s on ``highs-columns`` against 0.33 s on
#: ``highs``, UCRL-CMDP's 0.28 s on ``highs-box-columns`` against 0.18 s)
COLUMNS_FROM_ENTRIES = 1000
#: the column-generation backend ``auto`` takes for each optimistic program (its ``COMPILES`` declares the program)
OPTIMISTIC_COLUMNS = {OptimisticProgram: "highs-columns", BoxOptimisticProgram: "highs-box-columns"}
#: ``auto`` takes ``mdp-columns`` for an episodic program it compiles itself (the episodic occupancy program: the
#: known-model optimum) with LP-representable utilities from this many kernel entries over an episode's transitions on
#: (:func:`episode_entries`). Measured (benchmarks/bench_episodic.py --crossover, random dense kernels, one binding
#: budget, compile + solve, CPU seconds under load): at (S, A, H) = (5, 3, 5), 300 entries, 0.003 on ``highs`` against
#: 0.004 on ``mdp-columns``; at (10, 4, 10), 3,600 entries, 0.008 against 0.002; at (50, 5, 20), 237,500 entries,
#: 0.69 against 0.011; at (200, 5, 50) ``highs`` does not finish in 120 s, ``mdp-columns`` solves it in 0.6-0.8 s (1.9-6.3 s with the program's build)
EPISODIC_COLUMNS_FROM_ENTRIES = 2000
#: the same for utilities that are not LP-representable (``cvxpy`` takes the whole program; ``mdp-columns`` a conic
#: master): measured with a sum of logs (two runs), neither is faster throughout below it (at (10, 4, 10), 3,600
#: entries, ``cvxpy`` 3x faster; at (10, 4, 20), 7,600 entries, 0.8x to 2.9x), ``mdp-columns`` 10x to 22x faster from
#: (20, 4, 10), 14,400 entries, and 1,900x at (50, 5, 20) (32 s CPU against 0.017)
EPISODIC_CONIC_COLUMNS_FROM_ENTRIES = 10_000
#: the programs over per-step occupancies, which rule 0 of :func:`choose_backend` decides for (a long-run program on
#: an episodic model goes through rules 1 to 3 as on any model)
EPISODIC_PROGRAMS = (EpisodicOccupancyProgram, EpisodicExtendedProgram)


def choose_backend(utilities: Sequence[Utility], model: CMDP | None = None,
                   program: type[Program] = OccupancyProgram) -> str:
    """The ``auto`` choice, the one rule every caller uses (the optimum, the agents, ``curlopt run``'s reference optimum).

    From the program type, the model's size and structure and the utilities' forms (docs/guide/solvers.md has the
    table with the measured figures):

    0. an episodic program (:data:`EPISODIC_PROGRAMS`) that ``mdp-columns`` compiles itself (the episodic occupancy
       program) with at least :data:`EPISODIC_COLUMNS_FROM_ENTRIES` kernel entries over an episode
       (:func:`episode_entries`) for LP-representable utilities, :data:`EPISODIC_CONIC_COLUMNS_FROM_ENTRIES` for the
       others: ``mdp-columns``, when it takes the utilities; an episodic program goes on to rule 3 otherwise (rules 1
       and 2 are the long-run programs', and per-step kernels have no single chain to measure a reach depth on);
    1. a program ``mdp-columns`` compiles itself (the occupancy program, safe mode's programs) on a model of at least
       :data:`COLUMNS_FROM_STATES` states whose chain is shallow (:func:`reach_depth` at most :data:`SHALLOW_DEPTH`):
       ``mdp-columns``, when it takes the utilities;
    2. UC-CURL's optimistic program or UCRL-CMDP's box program with LP-representable utilities on a kernel of at least
       :data:`COLUMNS_FROM_ENTRIES` entries (:func:`kernel_entries`): ``highs-columns`` or ``highs-box-columns``
       (:data:`OPTIMISTIC_COLUMNS`), unless the model is stored sparse, has at least :data:`COLUMNS_FROM_STATES`
       states and a shallow chain (there HiGHS's whole LP is faster: rule 3);
    3. otherwise ``highs`` when every utility is LP-representable, else the first installed backend (in registry
       order, see :func:`auto_candidates`) that accepts them all.

    Parameters
    ----------
    utilities : sequence of Utility
        The objective and the constraints.
    model : CMDP, optional
        The model the program is built on; without it only rule 3 applies.
    program : type, default OccupancyProgram
        The program type that will be compiled.

    Raises
    ------
    BackendError
        When no installed backend accepts every utility.
    """
    utilities = list(utilities)
    installed = installed_backends()
    lp = all(u.is_lp_representable for u in utilities)

    def takes(name: str) -> bool:
        return name in installed and all(backend_class(name).accepts(u) for u in utilities)

    if isinstance(model, EpisodicCMDP) and issubclass(program, EPISODIC_PROGRAMS):
        threshold = EPISODIC_COLUMNS_FROM_ENTRIES if lp else EPISODIC_CONIC_COLUMNS_FROM_ENTRIES
        if (takes("mdp-columns") and backend_class("mdp-columns").compiled_form(program)
                and episode_entries(model) >= threshold):
            return "mdp-columns"
    elif model is not None:
        large_and_shallow = large_shallow_chain(model)
        if large_and_shallow and takes("mdp-columns") and backend_class("mdp-columns").compiled_form(program):
            return "mdp-columns"
        columns = OPTIMISTIC_COLUMNS.get(program)
        if (columns is not None and lp and kernel_entries(model) >= COLUMNS_FROM_ENTRIES and takes(columns)
                and not (model.sparse and large_and_shallow)):
            return columns
    if lp and "highs" in installed:
        return "highs"
    for name in auto_candidates():
        if all(backend_class(name).accepts(u) for u in utilities):
            return name
    raise BackendError(
        f"no installed backend accepts all of {utilities}; install the cvxpy or pyomo backend:"
        " pip install 'curlopt[cvxpy]' or 'curlopt[pyomo]'."
    )


def large_shallow_chain(model: CMDP) -> bool:
    """True for a model of at least :data:`COLUMNS_FROM_STATES` states whose chain is shallow (:func:`reach_depth` at
    most :data:`SHALLOW_DEPTH`): where ``auto`` solves the occupancy programs by ``mdp-columns``."""
    return model.n_states >= COLUMNS_FROM_STATES and model.has_kernel and reach_depth(model) <= SHALLOW_DEPTH


def auto_takes(name: str) -> str:
    """Where the ``auto`` rule (:func:`choose_backend`) takes the backend registered as ``name``, in words (for
    ``curlopt backends``)."""
    large = f"S >= {COLUMNS_FROM_STATES}, reach depth <= {SHALLOW_DEPTH}"
    optimistic = (f"LP utilities, >= {COLUMNS_FROM_ENTRIES:,} kernel entries, unless stored sparse with {large}")
    where = {
        "highs": "LP-representable utilities, where no column backend is taken",
        "highs-columns": f"UC-CURL's optimistic program with {optimistic}",
        "highs-box-columns": f"UCRL-CMDP's box program with {optimistic} (and UCRL-CMDP's default)",
        "mdp-columns": (f"the occupancy program and safe mode's programs on large shallow chains ({large}); the"
                        f" episodic occupancy program from {EPISODIC_COLUMNS_FROM_ENTRIES:,} kernel entries over an"
                        f" episode (LP utilities; {EPISODIC_CONIC_COLUMNS_FROM_ENTRIES:,} for the others)"),
    }
    if name in where:
        return where[name]
    if name in _REGISTRY and backend_class(name).auto_choice:
        return "utilities no LP backend takes, when it is the first installed backend (registry order) to take them"
    return "never (used only when named)"


def auto_backend(backend: str | Backend, model: CMDP, program: type[Program]) -> str | Backend:
    """``backend`` as given, but ``"auto"`` chosen for ``program`` on ``model`` (:func:`choose_backend`): how an agent
    resolves its ``backend`` option before it builds it. A ``model`` that is not a CMDP passes: the agent refuses it."""
    if isinstance(backend, str) and backend == "auto" and isinstance(model, CMDP):
        return choose_backend((model.objective, *model.constraints), model, program)
    return backend


def resolve_backend(backend: str | Backend, utilities: Sequence[Utility], model: CMDP | None = None,
                    program: type[Program] = OccupancyProgram, **options: Any) -> Backend:
    """Like :func:`get_backend`, and ``"auto"`` picks one for ``utilities`` (and, when given, ``program`` on
    ``model``; see :func:`choose_backend`)."""
    if isinstance(backend, str) and backend == "auto":
        backend = choose_backend(utilities, model, program)
    return get_backend(backend, **options)


def kernel_entries(model: CMDP) -> int:
    """The kernel entries a program of ``model`` carries: the stored nonzeros of a sparse-stored kernel, else S²·A
    (a dense-stored model's programs have every successor)."""
    return model.nnz if model.sparse else model.n_states ** 2 * model.n_actions


def episode_entries(model: EpisodicCMDP) -> int:
    """The kernel entries an episodic program of ``model`` carries over an episode: each of the H − 1 transitions'
    kernel's (its stored nonzeros when stored sparse, else S²·A), summed."""
    if model.horizon <= 1:
        return 0
    if model.time_homogeneous:
        return (model.horizon - 1) * kernel_entries(model)
    dense = model.n_states ** 2 * model.n_actions
    return sum(int(k.nnz) if sp.issparse(k) else dense for k in (model.step_kernel(h) for h in range(model.horizon - 1)))


def reach_depth(model: CMDP) -> int:
    """The steps breadth-first search from state 0 needs to reach every state it reaches, over every action's
    transitions: how far apart the chain's states are (a queue's buffer: its length; a random sparse kernel: a
    few steps). Value iteration needs at least this many sweeps to carry a value across the chain."""
    from scipy.sparse import csgraph

    S, A = model.n_states, model.n_actions
    transitions = sp.csr_array(model.transitions)
    rows = np.repeat(np.arange(S * A) // A, np.diff(transitions.indptr))
    graph = sp.csr_array((np.ones(rows.size), (rows, transitions.indices)), shape=(S, S))
    distances = csgraph.shortest_path(graph, indices=0, unweighted=True)
    return int(np.max(distances[np.isfinite(distances)]))


set_backend_finder(backends_accepting)  # error messages of Backend.check name the backends that can take a utility
