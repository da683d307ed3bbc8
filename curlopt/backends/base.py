"""What every backend is: a declaration of what it accepts, a compile step, and a shared solve.

A backend is declared the way CVXPY declares a solver interface: a name, the
Python packages it needs (and the extra that installs them), and a test of what
utilities it can express; its keyword options are declared once, as Pyomo's
``SolverConfig`` declares a solver's (:mod:`curlopt.backends.options`), and how it
compiles utility forms is one table (:mod:`curlopt.backends.form_table`).
``compile(program)`` builds the solver's model once; the returned
:class:`CompiledProgram` re-reads the program's changed data before each
``solve()``. The ε-tight / fallback logic (docs/math.md §4) and the time limit live
here, once, so no backend can get them wrong.

Which programs a backend compiles is declared too: ``COMPILES`` maps program types to
compiled forms, looked up along the program type's method resolution order (so an
entry for :class:`~curlopt.programs.blocks.Program` takes every program, through its
LP form or its blocks and rows, with no code for the new type), and ``DELEGATES``
names the backends a program type it does not compile is handed to (the first that
is installed and can express the program's utilities). :meth:`Backend.compile`
dispatches and delegates, in one place; a delegated program is a
:class:`DelegatedProgram`, whose results name the backend that was asked and whose
``solver`` says which backend solved it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.util
import inspect
import math
import os
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import (
    BackendError,
    BackendNotInstalledError,
    BackendOptionError,
    CurloptError,
    UnsupportedUtilityError,
    UtilityCodeError,
)
from ..programs.blocks import Program
from ..utilities.library import CustomUtility, Utility, onto_domain
from .form_table import FormTable
from .options import COMMON_OPTIONS, Option, check_options, declared
from .results import (
    ALMOST_OPTIMAL_TOLERANCE,
    OBJECTIVE_TOLERANCE,
    OPTIMAL_TOLERANCE,
    ProgramVariant,
    SolutionStatus,
    SolveResult,
    Status,
)

__all__ = [
    "Backend", "CompiledProgram", "DelegatedProgram", "RawSolution", "CompiledForm", "Exactly", "exactly",
    "call_utility", "is_user_utility", "expression_error",
    "solver_output_to_stderr", "captured_output", "set_backend_finder", "package_version",
]


# ----------------------------------------------------------------------------
# User code: a utility's exceptions are errors naming it, never solver statuses
# ----------------------------------------------------------------------------


def is_user_utility(utility: Utility) -> bool:
    """True for a utility whose code the user wrote: a :class:`CustomUtility`, or a class defined outside curlopt."""
    module = type(utility).__module__ or ""
    return isinstance(utility, CustomUtility) or not (module == "curlopt" or module.startswith("curlopt."))


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _raised(utility: Utility, role: str, method: str, exc: BaseException) -> str:
    """E.g. ``the objective CustomUtility(dim=2, concave) raised NameError in its gradient: name 'x' is not defined``."""
    text = " ".join(str(exc).split())
    return f"{role} {utility!r} raised {type(exc).__name__} in its {method}" + (f": {text}" if text else "") + "."


def call_utility(utility: Utility, role: str, method: str, function: Callable[..., Any], *args: Any,
                 allowed: tuple[type[BaseException], ...] = ()) -> Any:
    """``function(*args)``, code of ``utility`` (its ``method``), with any exception re-raised as a
    :class:`UtilityCodeError` naming the utility and its ``role`` ("the objective", "constraint 0").

    ``NotImplementedError`` (a method the utility does not have), curlopt's own errors and the exception
    types in ``allowed`` (e.g. domain errors a solver handles by shortening its step) pass unchanged.
    """
    try:
        return function(*args)
    except (NotImplementedError, CurloptError):
        raise
    except allowed:
        raise
    except Exception as exc:
        raise UtilityCodeError(_raised(utility, role, method, exc)) from exc


def expression_error(backend: str, utility: Utility, role: str, method: str, exc: Exception) -> CurloptError:
    """The error for an exception raised while ``backend`` builds ``utility``'s expression (``method``).

    Code the user wrote (see :func:`is_user_utility`) gives a :class:`UtilityCodeError`; a built-in
    utility that the backend's modelling library cannot represent gives a :class:`BackendError`.
    """
    if is_user_utility(utility):
        return UtilityCodeError(_raised(utility, role, method, exc))
    return BackendError(
        f"the {backend} backend cannot build {role} {utility!r}: its {method} raised {_describe(exc)}"
        " (the utility is valid, but this backend's modelling library cannot represent it); try another backend."
    )


# ----------------------------------------------------------------------------
# Solver output
# ----------------------------------------------------------------------------


def _flush_c_stdio() -> None:
    """Flush the C library's stdio buffers (solvers print with printf; a pipe or file buffers it)."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except Exception:  # no C library to reach (unusual platforms): Python's own flush is all we can do
        pass


@contextlib.contextmanager
def captured_output() -> Iterator[list[str]]:
    """Capture what is written to file descriptor 1 inside the block (C code included).

    Yields a list; when the block ends, the captured text is appended to it. Used to read the
    messages a solver prints when it refuses an option.
    """
    import tempfile

    out: list[str] = []
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with tempfile.TemporaryFile() as sink:
        _flush_c_stdio()
        saved = os.dup(1)
        os.dup2(sink.fileno(), 1)
        try:
            yield out
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            _flush_c_stdio()
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            out.append(sink.read().decode(errors="replace"))


@contextlib.contextmanager
def solver_output_to_stderr() -> Iterator[None]:
    """Send everything written to standard output inside the block to standard error.

    Both Python's ``sys.stdout`` and file descriptor 1 are redirected (``os.dup2``), so the output of
    solvers written in C (HiGHS, SCS, Clarabel, Ipopt) goes to stderr too. The command line wraps its
    computations in this, so that ``--json`` prints nothing but JSON on stdout.
    """
    try:
        stdout_fd = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
        stderr_fd = sys.__stderr__.fileno() if sys.__stderr__ is not None else 2
    except (AttributeError, OSError, ValueError):  # no real file descriptors (e.g. captured by a test runner)
        stdout_fd = stderr_fd = -1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = -1
    if stdout_fd >= 0 and stderr_fd >= 0:
        _flush_c_stdio()
        saved = os.dup(stdout_fd)
        os.dup2(stderr_fd, stdout_fd)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        if saved >= 0:
            _flush_c_stdio()
            os.dup2(saved, stdout_fd)
            os.close(saved)


def _join(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second


def _no_registry(utility: Utility) -> list[str]:
    return []


#: the installed backends that accept a utility, for the hint of an UnsupportedUtilityError: the registry
#: installs :func:`curlopt.backends.registry.backends_accepting` here when it loads (it imports this module,
#: so this module does not import it)
_backends_accepting: Callable[[Utility], list[str]] = _no_registry


def set_backend_finder(finder: Callable[[Utility], list[str]]) -> None:
    """Install the function naming the installed backends that accept a utility (called by the registry)."""
    global _backends_accepting
    _backends_accepting = finder


@dataclass
class RawSolution:
    """What a backend's single solve attempt produced."""

    status: Status
    x: np.ndarray | None = None
    iterations: int | None = None
    solver: str = ""
    message: str = ""
    solver_time: float | None = None  # the solver's own reported run time, when it gives one
    #: what else the solver reported (e.g. ``duality_gap``: a bound on how far the point's objective is from the
    #: optimum, which the shared check compares with OBJECTIVE_TOLERANCE); copied into the result's statistics
    statistics: dict[str, Any] = field(default_factory=dict)


@functools.cache
def package_version(module: str) -> str:
    """``"<distribution> <version>"`` of the installed package that provides the import name ``module``
    (read from its metadata, without importing it), or ``"<module> (not installed)"``."""
    try:  # most import names are their distribution's name: the quick look-up first
        return f"{module} {importlib.metadata.version(module)}"
    except importlib.metadata.PackageNotFoundError:
        pass
    # the full map of import names to distributions reads every installed package's metadata (~1 s)
    for distribution in importlib.metadata.packages_distributions().get(module, []):
        try:
            return f"{distribution} {importlib.metadata.version(distribution)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return f"{module} (not installed)"


@functools.cache
def _version_of(backend_class: type[Backend]) -> str:
    """``backend_class.version()``, asked once per class (a result carries it at every solve)."""
    return backend_class.version()


#: statuses of a solve stopped before optimality, whose point (when the backend gives one) may be kept
_LIMITS = (Status.TIME_LIMIT, Status.ITERATION_LIMIT)

#: what a utility's numpy code raises outside its domain
_DOMAIN_ERRORS = (ValueError, ZeroDivisionError, OverflowError, FloatingPointError)


#: the clock of time limits (one place, so that a test can stand it still or move it on)
_clock = time.perf_counter

#: how a backend compiles one program type: called as ``form(backend, program)`` (a :class:`CompiledProgram` class,
#: or a function that picks one)
CompiledForm = Callable[..., "CompiledProgram"]


@dataclass(frozen=True)
class Exactly:
    """A ``COMPILES`` entry for its program type itself, not for the type's subclasses (see :func:`exactly`)."""

    form: CompiledForm


def exactly(form: CompiledForm) -> Exactly:
    """Declare ``form`` for the program type it is listed under only, not for that type's subclasses.

    For a compiled form that states the program's rows its own way (a column-generation master): a subclass may add
    rows it would not know of, so a subclass goes on along its method resolution order (or to a delegate).
    """
    return Exactly(form)


class Backend(ABC):
    """Base class of the backends.

    Subclasses set ``name``, ``requires`` (import names), ``extra`` (the ``pip install curlopt[extra]``
    that provides them), ``takes``, ``STATUS_MAP``, ``FORMS``, their own ``OPTIONS``, the programs they compile
    (``COMPILES``) and the backends they hand the others to (``DELEGATES``, with :meth:`delegate_options`), and
    implement :meth:`accepts` (and :meth:`version` when ``requires`` does not say it all).

    Parameters
    ----------
    *args
        The backend's own options by position, in the order of its ``OPTIONS``.
    time_limit : float or None, default None
        The most seconds one ``solve()`` may take, the ε-tight program and its fallback together; each
        backend hands what is left of it to its solver (and checks it between a solver's runs). Reaching
        it gives ``Status.TIME_LIMIT`` (no solution) and says so in the result's message. None: no limit.
    verbose : bool, default False
        Let the solver print its own log.
    **options
        The backend's own options (its ``OPTIONS``).

    Raises
    ------
    BackendOptionError
        For a keyword the backend does not take, a value its declaration refuses, or solver settings its
        solver refuses.
    """

    name: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    extra: ClassVar[str] = ""
    #: what the backend takes, in words, for error messages
    takes: ClassVar[str] = ""
    #: every status the solver can return, in the solver's own spelling, mapped to a
    #: :class:`~curlopt.backends.results.Status`; the tests check it against the solver's own list
    STATUS_MAP: ClassVar[dict[Any, Status]] = {}
    #: whether ``backend="auto"`` may choose this backend (:func:`curlopt.backends.registry.auto_candidates`);
    #: False for a backend that should run only when named (e.g. ``scipy``, which does what ``highs`` does
    #: without its hot start)
    auto_choice: ClassVar[bool] = True
    #: the backend's own keyword options (each an :class:`~curlopt.backends.options.Option`: name, types,
    #: default, doc, accepted values, check); every backend also takes ``time_limit`` and ``verbose``
    #: (:data:`~curlopt.backends.options.COMMON_OPTIONS`)
    OPTIONS: ClassVar[tuple[Option, ...]] = ()
    #: how the backend compiles each form class of :mod:`curlopt.utilities.forms`, or why it refuses it
    #: (:class:`~curlopt.backends.form_table.FormTable`); None for a backend that declares none
    FORMS: ClassVar[FormTable | None] = None
    #: the program types the backend compiles itself, each with its compiled form (:data:`CompiledForm`; wrapped in
    #: :func:`exactly` for that type alone): looked up along the program type's method resolution order, so
    #: ``{Program: CompiledLP}`` takes every program
    COMPILES: ClassVar[Mapping[type[Program], CompiledForm | Exactly]] = {}
    #: the backends a program type not in ``COMPILES`` is handed to: the first that is installed and can express the
    #: program's utilities compiles it, built with :meth:`delegate_options` and this backend's ``time_limit`` and
    #: ``verbose``; empty: such a program is refused
    DELEGATES: ClassVar[tuple[type[Backend], ...]] = ()

    # The checked values of the common options (class defaults, for a subclass whose __init__ skips ours).
    time_limit: float | None = None
    verbose: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared(cls.__name__, cls.OPTIONS)  # a name declared twice is a mistake in the class: say it now
        # inspect.signature (help(), the registry's keyword check) shows the declared options: the backend's own
        # (also positional, in their order), then time_limit and verbose; a subclass with an __init__ of its own
        # keeps that one's signature
        parameters = [inspect.Parameter(o.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=o.default)
                      for o in cls.OPTIONS]
        parameters += [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default)
                       for o in COMMON_OPTIONS]
        signature = None if "__init__" in cls.__dict__ else inspect.Signature(parameters)
        cls.__signature__ = signature  # type: ignore[attr-defined]  # typeshed's type lacks the attribute inspect reads

    def __init__(self, *args: Any, **options: Any) -> None:
        owner = self.name or type(self).__name__
        if len(args) > len(self.OPTIONS):
            raise BackendOptionError(
                f"the {owner} backend takes at most {len(self.OPTIONS)} option(s) by position"
                f" ({', '.join(o.name for o in self.OPTIONS) or 'none'}), got {len(args)}; name them.")
        for option, value in zip(self.OPTIONS, args, strict=False):  # the leading options, one per positional
            if option.name in options:
                raise BackendOptionError(f"the {owner} backend was given {option.name} twice: by position and by name.")
            options[option.name] = value
        for name, value in check_options(owner, self.declared_options(), options).items():
            setattr(self, name, value)
        self._configure()

    @classmethod
    def declared_options(cls) -> dict[str, Option]:
        """Every keyword the backend takes: its own ``OPTIONS``, then ``time_limit`` and ``verbose``."""
        return declared(cls.__name__, cls.OPTIONS)

    def _configure(self) -> None:  # noqa: B027 - an optional hook with nothing to do by default, so not abstract
        """Checks that involve several options or the solver (settings tried on a throwaway solver), and
        derived attributes; called once the declared options are set. Raise ``BackendOptionError``."""

    @classmethod
    def version(cls) -> str:
        """The versions of the packages behind the backend, e.g. ``"highspy 1.15.1"`` (read from their
        metadata; a backend whose solver reports its own version adds it)."""
        return ", ".join(package_version(module) for module in cls.requires)

    @classmethod
    def is_installed(cls) -> bool:
        """True when every required package can be imported (checked without importing it)."""
        return all(importlib.util.find_spec(module) is not None for module in cls.requires)

    @classmethod
    @abstractmethod
    def accepts(cls, utility: Utility) -> bool:
        """True when the backend can express ``utility``."""

    @classmethod
    def solver_variants(cls) -> list[tuple[str, dict]]:
        """The solver configurations this backend can run here: ``(label, constructor options)`` pairs.

        ``curlopt compare-solvers`` runs each of them on the same program instances.
        """
        return [(cls.name, {})]

    def check(self, program: Program) -> None:
        """Raise if the backend is missing or cannot express one of the program's utilities."""
        if not self.is_installed():
            command = f"pip install 'curlopt[{self.extra}]'" if self.extra else f"pip install {' '.join(self.requires)}"
            raise BackendNotInstalledError(f"the {self.name} backend needs {', '.join(self.requires)}: {command}.")
        roles = [("objective", program.objective)] + [
            (f"constraint {m}", g) for m, g in enumerate(program.constraints)
        ]
        for role, utility in roles:
            if not self.accepts(utility):
                others = [n for n in _backends_accepting(utility) if n != self.name]
                hint = f"use the {' or '.join(others)} backend" if others else "no installed backend can take it"
                raise UnsupportedUtilityError(
                    f"the {self.name} backend cannot express the {role} {utility!r}"
                    f" ({self.name} takes {self.takes}{self._form_refusal(utility)}); {hint}."
                )

    def _form_refusal(self, utility: Utility) -> str:
        """``"; <form class>: <why>"`` when the backend's form table refuses the utility's form, else ``""``."""
        if self.FORMS is None:
            return ""
        try:
            form = utility.describe()
        except Exception:  # a hint for a refusal already decided: a utility's broken describe() must not hide it
            return ""
        reason = None if form is None else self.FORMS.refusal(form)
        return f"; {reason}" if reason else ""

    @classmethod
    def compiled_form(cls, program_type: type[Program]) -> CompiledForm | None:
        """The compiled form ``COMPILES`` declares for ``program_type`` (the entry nearest along its method resolution
        order; an :func:`exactly` entry only for its own type), or None: the program is delegated."""
        for klass in program_type.__mro__:
            entry = cls.COMPILES.get(klass)
            if isinstance(entry, Exactly):
                if klass is program_type:
                    return entry.form
            elif entry is not None:
                return entry
        return None

    def delegate_options(self, delegate: type[Backend]) -> dict[str, Any]:
        """The options (besides ``time_limit`` and ``verbose``) this backend hands to ``delegate`` when it builds it:
        none by default; a backend whose own options include the delegate's (e.g. HiGHS's ``options``) passes them."""
        return {}

    def delegate(self, program: Program) -> Backend:
        """The backend ``program`` is handed to: the first of ``DELEGATES`` that is installed and can express every
        utility of the program, built once per backend class and kept.

        Raises
        ------
        BackendError
            When no backend of ``DELEGATES`` can take it (or none is declared).
        """
        utilities = [program.objective, *program.constraints]
        for delegate in self.DELEGATES:
            if delegate.is_installed() and all(delegate.accepts(u) for u in utilities):
                # kept on the instance, made on first use (a subclass's own __init__ may skip ours)
                built: dict[type[Backend], Backend] = self.__dict__.setdefault("_delegates", {})
                if delegate not in built:
                    built[delegate] = delegate(**self.delegate_options(delegate), time_limit=self.time_limit,
                                               verbose=self.verbose)
                return built[delegate]
        names = ", ".join(d.name for d in self.DELEGATES) or "none declared"
        raise BackendError(
            f"the {self.name} backend does not compile the {type(program).__name__} ({program.kind} program), and no"
            f" backend it hands programs to ({names}) is installed and takes its utilities; use another backend.")

    def compile(self, program: Program) -> CompiledProgram:
        """Build the solver model for ``program`` once; re-solve it with :meth:`CompiledProgram.solve`.

        Raises
        ------
        BackendError
            When the backend is missing, cannot express a utility, or its own code path fails on the
            program (the message names the backend and the program's utilities).
        UtilityCodeError
            When a utility's own code raises.
        """
        self.check(program)
        try:
            return self._compile(program)
        except CurloptError:
            raise
        except MemoryError:
            raise
        except Exception as exc:  # the backend's own code path failed on a valid program: say where
            utilities = [f"objective {program.objective!r}"] + [
                f"constraint {m} {g!r}" for m, g in enumerate(program.constraints)]
            raise BackendError(
                f"the {self.name} backend could not compile the {program.kind} program of model"
                f" {program.model.name!r} ({'; '.join(utilities)}): {_describe(exc)}; try another backend."
            ) from exc

    def _compile(self, program: Program) -> CompiledProgram:
        """The compiled form ``COMPILES`` declares for the program's type, else the program handed to
        :meth:`delegate` (a :class:`DelegatedProgram`). A backend may override it (tests do, to wrap a compiled
        form), but a new program type needs no code here."""
        form = self.compiled_form(type(program))
        if form is not None:
            return form(self, program)
        return DelegatedProgram(self, program, self.delegate(program))

    def solve(self, program: Program) -> SolveResult:
        """Compile and solve once (convenience for one-off programs)."""
        return self.compile(program).solve()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class CompiledProgram(ABC):
    """A program compiled for one backend; ``solve()`` reads the program's current data.

    A backend's ``_solve`` hands :meth:`time_left` to its solver (and asks it again between a solver's
    runs); when nothing is left it returns :meth:`time_limit_reached`.
    """

    #: when the running ``solve()`` must end (a reading of the time-limit clock), None without a limit
    _deadline: float | None = None
    #: ``(objective, is_lp_representable)`` of the last objective :meth:`_objective_undefined` looked at
    _objective_form: tuple[Utility, bool] | None = None
    #: ``(objective, unbounded built-in)`` of the last objective :meth:`_unbounded_builtin` looked at
    _unbounded_form: tuple[Utility, bool] | None = None
    #: the attribute names :meth:`_backend_statistics` last saw, and those of them with the ``last_`` prefix
    _statistics_names: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    def __init__(self, backend: Backend, program: Program):
        self.backend = backend
        self.program = program

    def time_left(self) -> float | None:
        """Seconds left of the backend's ``time_limit`` in the running ``solve()`` (<= 0 once it is
        reached), or None without a limit."""
        return None if self._deadline is None else self._deadline - _clock()

    def time_limit_reached(self, when: str, solver: str = "", iterations: int | None = None,
                           solver_time: float | None = None) -> RawSolution:
        """The outcome of an attempt stopped by the backend's ``time_limit`` (``when``: e.g. "after 3 rounds")."""
        return RawSolution(Status.TIME_LIMIT, None, iterations, solver,
                           f"the time limit of {self.backend.time_limit:g} s was reached {when}", solver_time)

    @abstractmethod
    def _solve(self, with_constraints: bool) -> RawSolution:
        """One attempt: the ε-tight program (``with_constraints``) or the one without g rows."""

    def attempt(self, with_constraints: bool, deadline: float | None) -> RawSolution:
        """One attempt (:meth:`_solve`) that must end by ``deadline`` (a reading of the time-limit clock, or None):
        how a :class:`DelegatedProgram` hands what is left of its own solve's time limit to the program it wraps."""
        self._deadline = deadline
        try:
            return self._solve(with_constraints)
        finally:
            self._deadline = None

    @property
    def deadline(self) -> float | None:
        """When the running ``solve()`` must end (a reading of the time-limit clock), None without a limit."""
        return self._deadline

    def solve(self, fallback: bool = True) -> SolveResult:
        """Solve the ε-tight program; if it is infeasible, solve the fallback and label it.

        Parameters
        ----------
        fallback : bool, default True
            False returns the infeasible ε-tight result as it is (status ``infeasible``), for a caller
            with a fallback of its own (safe mode's least-violation program).

        Returns
        -------
        SolveResult
            Never raises for solver trouble: failures come back as a status. Only a proof of infeasibility
            (``infeasible``) leads to the fallback; any other failure, ``time_limit`` included, is the
            result. With the backend's ``time_limit``, both attempts share it: a fallback is not started
            once it is used up.
        """
        program = self.program
        started = time.perf_counter()
        limit = self.backend.time_limit
        self._deadline = None if limit is None else _clock() + limit
        tight = self._guarded_solve(True)
        raw, variant, message = tight, ProgramVariant.TIGHT, tight.message
        iterations = tight.iterations
        if fallback and tight.status is Status.INFEASIBLE and program.constraints:
            dropped = self._guarded_solve(False)
            raw, variant = dropped, ProgramVariant.FALLBACK
            message = (
                f"the ε-tight program (ε={program.epsilon:.6g}) is infeasible"
                + (f" ({tight.message})" if tight.message else "")
                + f"; solved the program without constraint rows instead (status {dropped.status.value})"
                + (f": {dropped.message}" if dropped.message else "")
            )
            if tight.iterations is not None or dropped.iterations is not None:
                iterations = (tight.iterations or 0) + (dropped.iterations or 0)
        statistics: dict[str, Any] = {}
        solution_status = SolutionStatus.NO_SOLUTION
        if raw.status is Status.ALMOST_OPTIMAL:
            message = self._judge_almost_optimal(raw, variant, message, statistics)
        elif raw.x is not None and (raw.status is Status.OPTIMAL or raw.status in _LIMITS):
            message = self._check_point(raw, variant, message, statistics)
        if raw.x is not None:
            solution_status = (SolutionStatus.OPTIMAL if raw.status is Status.OPTIMAL else SolutionStatus.FEASIBLE)
        if raw.status is Status.TIME_LIMIT:
            message = self._time_limit_message(message, limit)
        self._deadline = None
        elapsed = time.perf_counter() - started
        own = [a.solver_time for a in (tight, raw if raw is not tight else None) if a is not None and a.solver_time is not None]
        statistics = {"iterations": iterations, "solver_time": float(sum(own)) if own else None,
                      **self._backend_statistics(), **raw.statistics, **statistics}
        result = SolveResult(
            status=raw.status,
            program=variant,
            tight_status=tight.status,
            epsilon=program.epsilon,
            solve_time=elapsed,
            solver_time=float(sum(own)) if own else None,
            iterations=iterations,
            backend=self.backend.name,
            solver=raw.solver,
            solver_version=_version_of(type(self.backend)),
            message=message,
            solution_status=solution_status,
            statistics=statistics,
        )
        if raw.x is not None:  # a solution, or the feasible point a solve stopped at a limit reached
            self._fill(result, raw.x)
        return result

    def _backend_statistics(self) -> dict[str, Any]:
        """The counts a compiled program keeps of its last solve (its ``last_*`` attributes that are numbers or
        words, e.g. column-generation rounds), by name without the prefix.

        Asked at every solve, of an object with dozens of attributes: the names with the prefix are found again only
        when the attribute names changed (compared as a tuple, which is cheap for the same strings)."""
        attributes = vars(self)
        names = tuple(attributes)
        known = self._statistics_names
        if known is None or known[0] != names:
            known = self._statistics_names = (names, tuple(name for name in names if name.startswith("last_")))
        out = {}
        for name in known[1]:
            value = attributes[name]
            if isinstance(value, (bool, int, float, str, np.integer, np.floating)):
                out[name[len("last_"):]] = value.item() if isinstance(value, np.generic) else value  # JSON-ready
        return out

    @staticmethod
    def _time_limit_message(message: str, limit: float | None) -> str:
        """``message``, saying (once) which time limit stopped the solve: the backend's, or the solver's own."""
        if limit is not None and f"time limit of {limit:g} s" not in message:
            return _join(message, f"the time limit of {limit:g} s was reached")
        if limit is None and "time limit" not in message:
            return _join(message, "the solver stopped at a time limit of its own options")
        return message

    def _check_point(self, raw: RawSolution, variant: ProgramVariant, message: str, statistics: dict[str, Any]) -> str:
        """The check every backend shares of a point its solver called optimal, or reached before a limit.

        An ``OPTIMAL`` point stays ``OPTIMAL`` only when the program's own rows (the ε-tight constraints
        only for the tight variant) hold at it to :data:`~curlopt.backends.results.OPTIMAL_TOLERANCE`, the
        objective is finite around its rewards, and the duality gap the backend reports, if any, is at most
        :data:`~curlopt.backends.results.OBJECTIVE_TOLERANCE` relative; a residual or gap above those, with the
        residual at most :data:`~curlopt.backends.results.ALMOST_OPTIMAL_TOLERANCE`, gives
        ``OPTIMAL_INACCURATE`` (the point is kept); anything worse discards the point (``NUMERICAL_ERROR``).
        A point reached before a time or iteration limit is kept (status unchanged) when its rows hold to
        ``OPTIMAL_TOLERANCE`` and its objective is finite, and dropped otherwise. Returns the result's message;
        the measured residual and gap go into ``statistics``.
        """
        optimal = raw.status is Status.OPTIMAL
        x = np.asarray(raw.x, dtype=float)
        if not np.logical_and.reduce(np.isfinite(x), axis=None):  # np.all without its Python wrappers
            raw.x = None
            if not optimal:
                return message
            raw.status = Status.NUMERICAL_ERROR
            return _join(message, f"{raw.solver or 'the solver'} reported optimal without a finite point")
        residuals = self.program.residuals(x, include_constraints=variant is ProgramVariant.TIGHT)
        group = max(residuals, key=residuals.__getitem__)  # the first of the largest, as items() by value gave
        worst = residuals[group]
        statistics["residual"] = worst
        undefined = self._objective_undefined(x)
        if not optimal:
            if worst > OPTIMAL_TOLERANCE or undefined:
                raw.x = None
                return _join(message, f"at the point reached, {undefined}") if undefined else message
            return _join(message, f"the point reached is kept, not proven optimal: its rows hold to {worst:.2g}"
                                  + (f", duality gap {raw.statistics['duality_gap']:.3g}"
                                     if raw.statistics.get("duality_gap") is not None else ""))
        if undefined:
            raw.status, raw.x = Status.NUMERICAL_ERROR, None
            return _join(message, f"{raw.solver or 'the solver'} reported optimal, but {undefined}")
        if worst > ALMOST_OPTIMAL_TOLERANCE:
            raw.status, raw.x = Status.NUMERICAL_ERROR, None
            return _join(message, f"{raw.solver or 'the solver'} reported optimal, but the point was discarded: its"
                                  f" {group} residual is {worst:.2g} > {ALMOST_OPTIMAL_TOLERANCE:g}")
        notes = []
        if worst > OPTIMAL_TOLERANCE:
            notes.append(f"its {group} residual is {worst:.2g} > {OPTIMAL_TOLERANCE:g}")
        gap = raw.statistics.get("duality_gap")
        if gap is not None:
            # the program's own objective value as the solver reports it (a safe program's includes its bonus)
            scale = 1.0 + abs(float(raw.statistics.get("objective_value", 0.0)))
            if not gap <= OBJECTIVE_TOLERANCE * scale:  # a NaN gap is no certificate either
                notes.append(f"its duality gap is {gap:.3g} > {OBJECTIVE_TOLERANCE:g}·(1 + |f|)")
        if notes:
            raw.status = Status.OPTIMAL_INACCURATE
            return _join(message, f"{raw.solver or 'the solver'} reported optimal, but {' and '.join(notes)};"
                                  " the point is kept")
        return message

    def _objective_undefined(self, x: np.ndarray) -> str:
        """Why the objective is not finite around the rewards ``λ`` of ``x`` (e.g. a log of an average reward that
        is zero), or ``""``. Each λ_k is moved by ±:data:`OPTIMAL_TOLERANCE`, as much as the rows may be off: an
        optimum whose value is -inf or undefined that close is the supremum of an unbounded objective, not a
        maximum. Checked for the programs whose objective is the model's own f of λ."""
        program = self.program
        utility = program.model.objective
        if program.objective is not utility or self._piecewise_affine(utility):  # finite everywhere
            return ""
        rewards = self._on_domain(utility, np.asarray(program.reward_map @ x, dtype=float))
        probes = [rewards] + [self._on_domain(utility, rewards + sign * OPTIMAL_TOLERANCE * np.eye(rewards.size)[k])
                              for k in range(rewards.size) for sign in (-1.0, 1.0)]
        for probe in probes:
            try:
                with np.errstate(all="ignore"):
                    value = float(call_utility(utility, "the objective", "value", utility.value, probe,
                                               allowed=_DOMAIN_ERRORS))
            except _DOMAIN_ERRORS:
                value = math.nan
            if not math.isfinite(value):
                at = "at" if probe is rewards else f"within {OPTIMAL_TOLERANCE:g} of"
                return (f"the objective {utility!r} is {value} {at} the point's average rewards"
                        f" λ = {np.array2string(rewards, precision=3)} (outside its domain or unbounded there, e.g."
                        " a log of a zero average reward): the optimum is not finite, so there is no optimal policy")
        return ""

    def _piecewise_affine(self, utility: Utility) -> bool:
        """``utility.is_lp_representable``, asked once per objective object (it reads the utility's pieces, at
        every solve's check otherwise; a utility's form does not change)."""
        known = self._objective_form
        if known is None or known[0] is not utility:
            known = self._objective_form = (utility, bool(utility.is_lp_representable))
        return known[1]

    @staticmethod
    def _on_domain(utility: Utility, rewards: np.ndarray) -> np.ndarray:
        """``rewards`` with entries within :data:`OPTIMAL_TOLERANCE` below the objective's domain moved onto its
        bound (:func:`~curlopt.utilities.library.onto_domain`): the rows hold only to that, so such a point is on
        the boundary, where a closed domain's value (an entropy's at 0) is finite. Unchanged when the utility's
        ``domain_lower`` fails (a user's code): its own value then decides."""
        try:
            return onto_domain(utility, rewards, OPTIMAL_TOLERANCE)
        except Exception:  # a user's domain_lower that raises: evaluated where the solver put the point
            return rewards

    def _judge_almost_optimal(self, raw: RawSolution, variant: ProgramVariant, message: str,
                              statistics: dict[str, Any] | None = None) -> str:
        """Keep or discard a point solved to reduced accuracy (the rule of :class:`~curlopt.backends.results.Status`).

        The point is kept when every residual of the program that was solved (the ε-tight constraints
        only for the tight variant) is at most :data:`~curlopt.backends.results.ALMOST_OPTIMAL_TOLERANCE`
        and the objective is finite around it; otherwise ``raw`` becomes a ``NUMERICAL_ERROR`` without a
        point. Returns the result's message.
        """
        x = None if raw.x is None else np.asarray(raw.x, dtype=float)
        if x is None or not np.all(np.isfinite(x)):
            raw.status, raw.x = Status.NUMERICAL_ERROR, None
            return _join(message, "the solver reported reduced accuracy without a finite point")
        residuals = self.program.residuals(x, include_constraints=variant is ProgramVariant.TIGHT)
        group = max(residuals, key=residuals.__getitem__)  # the first of the largest, as items() by value gave
        worst = residuals[group]
        if statistics is not None:
            statistics["residual"] = worst
        undefined = self._objective_undefined(x)
        if undefined:
            raw.status, raw.x = Status.NUMERICAL_ERROR, None
            return _join(message, f"solved to reduced accuracy ({raw.solver}), and {undefined}")
        if worst <= ALMOST_OPTIMAL_TOLERANCE:
            return _join(message, f"solved to reduced accuracy ({raw.solver}); the point was kept: its largest"
                                  f" residual ({group}) is {worst:.2g} <= {ALMOST_OPTIMAL_TOLERANCE:g}")
        raw.status, raw.x = Status.NUMERICAL_ERROR, None
        return _join(message, f"solved to reduced accuracy ({raw.solver}) and the point was discarded: its"
                              f" {group} residual is {worst:.2g} > {ALMOST_OPTIMAL_TOLERANCE:g}")

    def _guarded_solve(self, with_constraints: bool) -> RawSolution:
        """``_solve``, with any solver exception turned into a SOLVER_ERROR status, and not started once the
        time limit is reached.

        A :class:`UtilityCodeError` (a utility's own code raised, e.g. a ``NameError`` in a user's
        gradient called back by the solver) is not solver trouble: it passes, and the run stops with it.
        """
        left = self.time_left()
        if left is not None and left <= 0:  # e.g. the ε-tight attempt used it all: no fallback attempt
            return self.time_limit_reached("before this attempt started")
        try:
            return self._solve(with_constraints)
        except UtilityCodeError:
            raise
        except Exception as exc:  # a solver fault must never crash an agent's run
            return RawSolution(Status.SOLVER_ERROR, message=f"{type(exc).__name__}: {exc}")

    def _fill(self, result: SolveResult, x: np.ndarray) -> None:
        program, model = self.program, self.program.model
        x = np.asarray(x, dtype=float)
        parts = program.interpret(x)  # what the solution means is the program's to say, not the backend's
        result.x = x
        result.occupancy = parts["occupancy"]
        result.joint = parts["joint"]
        result.policy = parts["policy"]
        result.unreached = parts.get("unreached")
        result.rewards = parts["rewards"]
        result.costs = parts["costs"]
        result.constraint_values = np.array(
            [call_utility(g, f"constraint {m}", "value", g.value, result.costs) for m, g in enumerate(model.constraints)],
            dtype=float,
        )
        # evaluated where the check judged it (totals a solver left a hair outside a closed domain are on it); a
        # built-in utility unbounded below reads the rewards as they are (onto_domain would hand it an equal copy)
        objective = model.objective
        rewards = result.rewards if self._unbounded_builtin(objective) else self._on_domain(objective, result.rewards)
        result.objective = float(call_utility(objective, "the objective", "value", objective.value, rewards))

    def _unbounded_builtin(self, utility: Utility) -> bool:
        """Whether ``utility`` is curlopt's own code with the default domain, unbounded below (asked once per objective
        object: its class and domain do not change)."""
        known = self._unbounded_form
        if known is None or known[0] is not utility:
            unbounded = getattr(utility.domain_lower, "__func__", None) is Utility.domain_lower
            known = self._unbounded_form = (utility, unbounded and not is_user_utility(utility))
        return known[1]


class DelegatedProgram(CompiledProgram):
    """A program its backend does not compile itself, compiled by the backend it delegates to
    (:meth:`Backend.delegate`).

    Results name the backend that was asked (the base class fills them) and its version; their ``solver`` says which
    backend solved the program. Each attempt hands the delegate what is left of this solve's time limit.

    Attributes
    ----------
    delegate : Backend
        The backend that compiled the program.
    inner : CompiledProgram
        Its compiled form.
    """

    def __init__(self, backend: Backend, program: Program, delegate: Backend):
        super().__init__(backend, program)
        self.delegate = delegate
        self.inner = delegate.compile(program)

    def _solve(self, with_constraints: bool) -> RawSolution:
        raw = self.inner.attempt(with_constraints, self.deadline)
        raw.solver = f"{raw.solver} (the {type(self.program).__name__} is delegated to the {self.delegate.name} backend)"
        return raw
