"""Reading a HiGHS solution, duals and basis through the C API (a ctypes view of the Highs object), faster than highspy's copies."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import highspy

#: pybind11's platform ABI id of highspy's Linux wheels (libstdc++, C++11 ABI). pybind11's conduit compares it with
#: its own and answers None on any other platform, which leaves :class:`SolutionReader` off.
PYBIND11_ABI_ID = b"system_libstdcpp_gxx_abi_1xxx_use_cxx11_abi_1"


def _highs_pointer(highs: highspy.Highs) -> tuple[ctypes.CDLL, int] | None:
    """The C++ ``Highs*`` behind a highspy object and a handle on HiGHS's C API, or None when not available.

    The pointer comes from pybind11's cross-module conduit (``_pybind11_conduit_v1_``, pybind11 >= 2.13), given
    the ``std::type_info`` of ``Highs`` that highspy's extension exports; the conduit returns None rather than a
    pointer when the ABI or the type does not match. It stays valid while the highspy object lives.
    """
    try:
        from highspy import _core

        library = ctypes.CDLL(_core.__file__)  # its symbol lookups reach libhighs, which it links
        type_info = ctypes.c_char.in_dll(library, "_ZTI5Highs")
        new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
            ("PyCapsule_New", ctypes.pythonapi))
        capsule = new_capsule(ctypes.addressof(type_info), b"St9type_info", None)  # typeid(std::type_info).name()
        # pybind11 adds the conduit to every bound class; highspy's stubs do not list it
        answer = highs._pybind11_conduit_v1_(  # type: ignore[attr-defined]
            PYBIND11_ABI_ID, capsule, b"raw_pointer_ephemeral")
        if answer is None:
            return None
        name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", ctypes.pythonapi))
        pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", ctypes.pythonapi))
        return library, pointer(answer, name(answer))
    except Exception:  # another highspy build or platform: the list path is used instead
        return None


class RawCalls(NamedTuple):
    """HiGHS C API functions on one solver (see :meth:`SolutionReader.c_calls`): each takes ``pointer`` first."""

    get_solution: Any  #: Highs_getSolution(pointer, col_value, col_dual, row_value, row_dual) -> status
    get_basis: Any  #: Highs_getBasis(pointer, col_status, row_status) -> status
    model_status: Any  #: Highs_getModelStatus(pointer) -> HiGHS's integer model status
    pointer: ctypes.c_void_p


class SolutionReader:
    """HiGHS's primal column values, copied by HiGHS's C API into a numpy array.

    highspy 1.15 returns the solution as Python lists (``getSolution().col_value``); for the optimistic
    program at (S, A) = (60, 10) (72,600 columns) building that list and then an array takes ~3.5 ms a
    solve, against HiGHS's ~40 ms. ``Highs_getSolution`` of the C API, called on the same solver object,
    writes into a buffer instead (~0.1 ms). Reading changes nothing in HiGHS, so every solution, and every
    trajectory, is the same as through the list. Use :meth:`create`, which answers None where the C API or
    the pointer is not available; callers then read the list.
    """

    def __init__(self, highs: highspy.Highs, library: ctypes.CDLL, pointer: int) -> None:
        self._highs = highs  # keeps the object behind the pointer alive
        self._library = library
        self._pointer = pointer
        #: the pointer as ctypes holds it, made once rather than converted from an int on every call
        self._handle = ctypes.c_void_p(pointer)
        #: HiGHS writes the column values here (its address made once); each read hands out a copy
        self._buffer = np.empty(0)
        self._buffer_address = ctypes.c_void_p(self._buffer.ctypes.data)
        self._get = library.Highs_getSolution
        self._get.argtypes = [ctypes.c_void_p] * 5
        self._get.restype = ctypes.c_int
        self._num_col = library.Highs_getNumCol
        self._num_col.argtypes = [ctypes.c_void_p]
        self._num_col.restype = ctypes.c_int
        self._get_basis, self._set_basis = library.Highs_getBasis, library.Highs_setBasis
        for function in (self._get_basis, self._set_basis):
            function.argtypes, function.restype = [ctypes.c_void_p] * 3, ctypes.c_int

    @classmethod
    def create(cls, highs: highspy.Highs) -> SolutionReader | None:
        """A reader for ``highs``, or None if the pointer cannot be had or does not answer like ``highs``."""
        found = _highs_pointer(highs)
        if found is None:
            return None
        reader = cls(highs, *found)
        return reader if reader.n_cols() == highs.getNumCol() else None

    def n_cols(self) -> int:
        return int(self._num_col(self._handle))

    def col_values(self) -> np.ndarray:
        """The current solution's column values (a new array; null pointers skip duals and row values).

        HiGHS writes as many values as its solution holds, the column count, into a buffer kept from read to read
        (resized when the count changes), and the answer is a copy of it: every solve of a run reads here, and
        numpy's ``ctypes.data`` of a new array costs more than the copy.
        """
        n = self.n_cols()
        if self._buffer.size != n:
            self._buffer = np.empty(n)
            self._buffer_address = ctypes.c_void_p(self._buffer.ctypes.data)
        self._get(self._handle, self._buffer_address, None, None, None)
        return self._buffer.copy()

    def col_values_and_row_duals(self, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        """The current solution's column values and row duals (``n_rows``: the model's row count)."""
        values, duals = np.empty(self.n_cols()), np.empty(n_rows)
        self._get(self._handle, values.ctypes.data, None, None, duals.ctypes.data)
        return values, duals

    def c_calls(self) -> RawCalls:
        """HiGHS's C functions behind this reader and the solver pointer they take, for a caller that reads into
        buffers it keeps by address (column generation's master reads its solution, basis and status several
        times an epoch, where making arrays or taking their addresses at each call costs more than the read)."""
        status = self._library.Highs_getModelStatus
        status.argtypes, status.restype = [ctypes.c_void_p], ctypes.c_int
        return RawCalls(self._get, self._get_basis, status, self._handle)

    def has_int32_basis(self) -> bool:
        """True when HiGHS's integers are 32-bit, so basis statuses can pass as int32 arrays."""
        size = self._library.Highs_getSizeofHighsInt
        size.argtypes, size.restype = [ctypes.c_void_p], ctypes.c_int
        return size(self._handle) == 4

    def get_basis(self, cols: np.ndarray, rows: np.ndarray) -> None:
        """Write the column and row basis statuses into the int32 arrays ``cols`` and ``rows``."""
        self._get_basis(self._handle, cols.ctypes.data, rows.ctypes.data)

    def set_basis(self, cols: np.ndarray, rows: np.ndarray) -> None:
        """Start the next run from the int32 statuses ``cols`` and ``rows``."""
        self._set_basis(self._handle, cols.ctypes.data, rows.ctypes.data)
