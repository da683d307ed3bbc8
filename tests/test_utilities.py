"""The utility library: values against closed forms, derivatives against finite differences,
forms (and the CVXPY and Pyomo expressions and affine pieces compiled from them) against the
numpy value, model-file specs for every registered type, and validation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from curlopt import (
    AlphaFairness,
    ConvexQuadratic,
    CustomUtility,
    Entropy,
    Linear,
    LinearBound,
    MaxOfLinear,
    MinOfLinear,
    Norm,
    SumOfLogs,
    UtilityError,
)

RNG = np.random.default_rng(12345)


def library():
    """One instance of every shipped utility, with points inside its domain."""
    q = RNG.normal(size=(3, 3))
    return [
        Linear([1.0, -2.0, 0.5], offset=0.3),
        SumOfLogs(dim=3),
        SumOfLogs(weights=[1.0, 2.0, 0.5], shift=0.1),
        AlphaFairness(0.5, dim=3),
        AlphaFairness(2.0, weights=[1.0, 1.0, 3.0], shift=0.05),
        AlphaFairness(1.0, dim=3),
        MinOfLinear.max_min(3),
        MinOfLinear([[1.0, 0.0, 1.0], [0.0, 2.0, -1.0]], [0.1, 0.0]),
        Entropy(3),
        Entropy(3, shift=0.01),
        LinearBound([1.0, 0.0, -1.0], 0.2),
        MaxOfLinear([[1.0, 1.0, 0.0], [0.0, -1.0, 2.0]], [0.5, 0.1]),
        ConvexQuadratic(q @ q.T, linear=[0.1, 0.2, 0.3], constant=-1.0),
        Norm([0.1, 0.2, 0.3], 0.05, ord=2),
        Norm([0.1, 0.2, 0.3], 0.05, ord=1),
        Norm([0.1, 0.2, 0.3], 0.05, ord=math.inf),
    ]


def points(n=5):
    return [RNG.uniform(0.05, 1.0, size=3) for _ in range(n)]


@pytest.mark.parametrize("utility", library(), ids=repr)
def test_gradient_and_hessian_match_finite_differences(utility):
    if not utility.smooth:
        pytest.skip("non-smooth: gradient is a subgradient")
    h = 1e-6
    for y in points():
        grad = utility.gradient(y)
        numeric = np.array([(utility.value(y + h * e) - utility.value(y - h * e)) / (2 * h) for e in np.eye(3)])
        np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)
        hess = utility.hessian(y)
        numeric_h = np.array([(utility.gradient(y + h * e) - utility.gradient(y - h * e)) / (2 * h) for e in np.eye(3)])
        np.testing.assert_allclose(hess, numeric_h.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("utility", library(), ids=repr)
def test_curvature_is_what_it_claims(utility):
    for y in points():
        eig = np.linalg.eigvalsh((utility.hessian(y) + utility.hessian(y).T) / 2)
        if utility.curvature == "concave":
            assert eig.max() <= 1e-9
        elif utility.curvature == "convex":
            assert eig.min() >= -1e-9
        else:
            assert np.allclose(eig, 0)


@pytest.mark.parametrize("utility", library(), ids=repr)
def test_affine_pieces_reproduce_the_value(utility):
    pieces = utility.affine_pieces()
    if pieces is None:
        assert not utility.is_lp_representable
        return
    w, c = pieces
    for y in points():
        terms = w @ y + c
        expected = terms.min() if utility.curvature == "concave" else terms.max()
        assert utility.value(y) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("utility", library(), ids=repr)
def test_cvxpy_expression_matches_value_and_is_dcp(utility):
    cp = pytest.importorskip("cvxpy")
    y_var = cp.Variable(3)
    from curlopt.backends.cvxpy import cvxpy_expression

    expr = cvxpy_expression(utility, y_var)
    assert expr.is_concave() if utility.curvature == "concave" else expr.is_convex()
    for y in points():
        y_var.value = y
        assert float(expr.value) == pytest.approx(utility.value(y), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("utility", [u for u in library() if u.smooth], ids=repr)
def test_pyomo_expression_matches_value(utility):
    pyo = pytest.importorskip("pyomo.environ")
    from curlopt.backends.pyomo.expressions import pyomo_expression

    for y in points(3):
        model = pyo.ConcreteModel()
        model.y = pyo.Var(range(3), initialize=dict(enumerate(y)))
        expr = pyomo_expression(utility, [model.y[i] for i in range(3)])
        assert pyo.value(expr) == pytest.approx(utility.value(y), rel=1e-9, abs=1e-12)


def test_closed_form_values():
    # ln e + ln 1 = 1
    assert SumOfLogs(dim=2).value([math.e, 1.0]) == pytest.approx(1.0)
    # α = 2: Σ y^(-1) / (-1) = -(1 + 1/2)
    assert AlphaFairness(2.0, dim=2).value([1.0, 2.0]) == pytest.approx(-1.5)
    # α = 1/2: Σ 2 sqrt(y) = 2 (1 + 2)
    assert AlphaFairness(0.5, dim=2).value([1.0, 4.0]) == pytest.approx(6.0)
    # entropy of the uniform distribution over n outcomes is ln n; 0 ln 0 = 0
    assert Entropy(4).value(np.full(4, 0.25)) == pytest.approx(math.log(4))
    assert Entropy(2).value([1.0, 0.0]) == 0.0
    assert MinOfLinear.max_min(3).value([0.3, 0.1, 0.2]) == pytest.approx(0.1)
    assert LinearBound([2.0, 1.0], 1.0).value([1.0, 1.0]) == pytest.approx(2.0)
    assert Norm([0.0, 0.0], 1.0).value([3.0, 4.0]) == pytest.approx(4.0)
    assert Norm([0.0, 0.0], 1.0, ord=1).value([3.0, -4.0]) == pytest.approx(6.0)
    assert ConvexQuadratic(np.eye(2), [1.0, 0.0], 2.0).value([1.0, 2.0]) == pytest.approx(1 + 4 + 1 + 2)
    # outside the domain a concave function is -inf
    assert SumOfLogs(dim=1).value([0.0]) == -math.inf
    assert Entropy(1).value([-0.1]) == -math.inf


def test_lp_representability_flags():
    assert Linear([1.0]).is_linear and LinearBound([1.0], 0.0).is_linear
    assert MinOfLinear.max_min(2).is_lp_representable and not MinOfLinear.max_min(2).is_linear
    assert MaxOfLinear([[1.0], [2.0]]).is_lp_representable
    assert Norm([0.0], 1.0, ord=math.inf).is_lp_representable
    assert not Norm([0.0], 1.0, ord=2).is_lp_representable
    assert not SumOfLogs(dim=2).is_lp_representable
    # an L1 ball in too many dimensions is not offered as an LP (2**dim pieces)
    assert not Norm(np.zeros(Norm.MAX_L1_PIECES_DIM + 1), 1.0, ord=1).is_lp_representable


@pytest.mark.parametrize(
    "build, pattern",
    [
        (lambda: SumOfLogs(), r"SumOfLogs needs `dim`"),
        (lambda: SumOfLogs(dim=0), r"dim must be a positive integer"),
        (lambda: SumOfLogs(weights=[1.0, -1.0]), r"weights must be non-negative"),
        (lambda: SumOfLogs(dim=2, shift=-1.0), r"shift must be a finite number >= 0"),
        (lambda: SumOfLogs(dim=3, weights=[1.0, 1.0]), r"dim=3 does not match 2 weights"),
        (lambda: AlphaFairness(0.0, dim=2), r"alpha must be a finite number > 0"),
        (lambda: AlphaFairness(float("nan"), dim=2), r"alpha must be a finite number > 0"),
        (lambda: Linear([1.0, np.nan]), r"Linear weights contains NaN"),
        (lambda: Linear([[1.0, 2.0]]), r"Linear weights must be one-dimensional"),
        (lambda: Linear([]), r"Linear weights must not be empty"),
        (lambda: MinOfLinear([[1.0, 2.0]], [0.0, 1.0]), r"MinOfLinear offset must have length 1"),
        (lambda: MaxOfLinear(np.zeros((0, 2))), r"MaxOfLinear matrix must be a non-empty 2-D array"),
        (lambda: ConvexQuadratic([[1.0, 0.0], [0.0, -1.0]]), r"not positive semidefinite"),
        (lambda: ConvexQuadratic([[1.0, 2.0], [0.0, 1.0]]), r"must be symmetric"),
        (lambda: ConvexQuadratic(np.eye(2), linear=[1.0]), r"linear must have length 2"),
        (lambda: Norm([0.0], 1.0, ord=3), r"Norm ord must be 1, 2 or inf"),
        (lambda: Norm([0.0], -1.0), r"radius must be a finite number >= 0"),
        (lambda: Entropy(2, shift=-0.5), r"Entropy shift must be a finite number >= 0"),
        (lambda: CustomUtility(2, "wavy", value=sum), r"curvature must be one of"),
        (lambda: CustomUtility(2, "concave", value=3.0), r"value must be a callable"),
    ],
)
def test_invalid_utilities_are_refused(build, pattern):
    with pytest.raises(UtilityError, match=pattern):
        build()


def test_wrong_input_length_is_an_error():
    with pytest.raises(UtilityError, match="takes a vector of length 2, got 3"):
        SumOfLogs(dim=2).value([1.0, 1.0, 1.0])


def test_custom_utility_exposes_what_it_was_given():
    u = CustomUtility(2, "concave", value=lambda y: -float(((y - 1) ** 2).sum()),
                      gradient=lambda y: -2 * (y - 1), hessian=lambda y: -2 * np.eye(2))
    assert u.value([1.0, 3.0]) == pytest.approx(-4.0)
    assert not u.has_cvxpy and not u.has_pyomo and not u.is_lp_representable
    np.testing.assert_allclose(u.gradient([0.0, 0.0]), [2.0, 2.0])


@pytest.mark.parametrize("utility", library(), ids=repr)
def test_shipped_utilities_pass_the_curvature_check(utility):
    from curlopt.utilities.library import curvature_violation

    assert curvature_violation(utility) is None


def test_a_utility_lying_about_its_curvature_is_caught():
    from curlopt.utilities.library import curvature_violation

    # f(y) = y0^2 + y1^2 is convex; declared concave it must be caught (Hessian 2I has eigenvalue 2 > 0)
    liar = CustomUtility(2, "concave", value=lambda y: float((y**2).sum()), gradient=lambda y: 2 * y,
                         hessian=lambda y: 2 * np.eye(2))
    point, eigenvalue = curvature_violation(liar)
    assert eigenvalue == pytest.approx(2.0)


# -- forms and model-file specs: every registered utility type ------------------------------------------------


def form_value(form, y):
    """The value of a form at ``y``, by numpy from the form's own numbers (not from any utility's code,
    except :class:`~curlopt.utilities.forms.Of`, which stands for a utility)."""
    from curlopt.utilities.library import forms as F

    y = np.asarray(y, dtype=float)
    if isinstance(form, F.AffinePieces):
        terms = form.matrix @ y + form.offset
        return {"affine": terms[0], "min": terms.min(), "max": terms.max()}[form.combine]
    if isinstance(form, F.Logs):
        return float(np.sum(form.weights * np.log(y + form.shift)))
    if isinstance(form, F.Powers):
        return float(np.sum(form.weights * (y + form.shift) ** form.exponent) / form.exponent)
    if isinstance(form, F.Entropy):
        return float(-np.sum(y * np.log(y + form.shift)))
    if isinstance(form, F.Quadratic):
        return float(y @ form.matrix @ y + form.linear @ y + form.constant)
    if isinstance(form, F.Norm):
        return float(np.linalg.norm(y - form.center, form.ord) - form.radius)
    if isinstance(form, F.Of):
        return form.utility.value(y)
    if isinstance(form, F.HeadPlusLinear):
        n = form.head.dim
        return form_value(form.head, y[:n]) + float(form.coefficients @ y[n:])
    if isinstance(form, F.Negated):
        return -form_value(form.inner, y)
    values = [form_value(term, y) for term in form.terms]
    return {F.Sum: sum, F.Minimum: min, F.Maximum: max}[type(form)](values)


def registered():
    from curlopt.utilities.library import UTILITY_TYPES

    return sorted(UTILITY_TYPES)


def examples(name):
    found = [u for u in library() if type(u).__name__ == name]
    assert found, f"the registered utility type {name} has no example in library(): add one"
    return found


@pytest.mark.parametrize("name", registered())
def test_every_registered_type_round_trips_through_its_spec(name):
    from curlopt.utilities.library import UTILITY_TYPES

    for utility in examples(name):
        spec = json.loads(json.dumps(utility.to_spec()))  # what a model file holds
        assert spec["type"] == name
        again = UTILITY_TYPES[name].from_spec(spec)
        assert type(again) is type(utility) and repr(again) == repr(utility)
        assert again.to_spec() == spec
        for y in points(3):
            assert again.value(y) == utility.value(y)


@pytest.mark.parametrize("name", registered())
def test_every_registered_types_form_has_its_value(name):
    for utility in examples(name):
        form = utility.describe()
        assert form is not None and form.dim == utility.dim
        for y in points():
            assert form_value(form, y) == pytest.approx(utility.value(y), rel=1e-12, abs=1e-12)


def test_the_registry_holds_the_built_in_types():
    assert registered() == sorted(["Linear", "SumOfLogs", "AlphaFairness", "MinOfLinear", "Entropy", "LinearBound",
                                   "MaxOfLinear", "ConvexQuadratic", "Norm"])


def test_only_registered_types_have_a_spec():
    class Tilted(Linear):  # a subclass of a registered type is not that type
        pass

    custom = CustomUtility(1, "concave", value=lambda y: float(y[0]))
    for utility in (custom, Tilted([1.0])):
        with pytest.raises(UtilityError, match="not of a registered utility type"):
            utility.to_spec()


def test_a_registered_user_type_loads_from_a_spec():
    from curlopt.utilities.library import UTILITY_TYPES, register_utility

    @register_utility
    class Doubled(Linear):
        def to_spec(self):
            return self._spec(weights=(self.weights / 2).tolist())

        @classmethod
        def from_spec(cls, spec):
            return cls(np.asarray(spec["weights"]) * 2)

    try:
        spec = Doubled([2.0, 4.0]).to_spec()
        assert spec == {"type": "Doubled", "weights": [1.0, 2.0]}
        assert UTILITY_TYPES["Doubled"].from_spec(spec).value([1.0, 1.0]) == 6.0
    finally:
        del UTILITY_TYPES["Doubled"]


def test_compositions_of_forms_have_their_values_and_pieces():
    from curlopt.utilities.library import forms as F

    rng = np.random.default_rng(7)
    a = F.AffinePieces([[1.0, -1.0], [0.5, 2.0]], [0.1, -0.3], "max")
    b = F.AffinePieces([[2.0, 0.0]], [1.0], "affine")
    c = F.AffinePieces([[0.0, 1.0], [-1.0, 0.5]], [0.2, 0.0], "max")
    cases = [
        (F.Sum((a, b, c)), lambda y: max(y[0] - y[1] + 0.1, 0.5 * y[0] + 2 * y[1] - 0.3) + 2 * y[0] + 1.0
         + max(y[1] + 0.2, -y[0] + 0.5 * y[1])),
        (F.Negated(a), lambda y: -max(y[0] - y[1] + 0.1, 0.5 * y[0] + 2 * y[1] - 0.3)),
        (F.Maximum((a, c)), lambda y: max(y[0] - y[1] + 0.1, 0.5 * y[0] + 2 * y[1] - 0.3, y[1] + 0.2,
                                           -y[0] + 0.5 * y[1])),
        (F.HeadPlusLinear(F.Norm([0.0], 1.0, math.inf), [3.0]), lambda y: abs(y[0]) - 1.0 + 3.0 * y[1]),
    ]
    for form, closed in cases:
        w, offsets = F.affine_pieces(form)
        for _ in range(5):
            y = rng.normal(size=2)
            assert form_value(form, y) == pytest.approx(closed(y), abs=1e-12)
            terms = w @ y + offsets
            expected = terms.min() if isinstance(form, F.Negated) else terms.max()
            assert expected == pytest.approx(closed(y), abs=1e-12)
    # a minimum of convex pieces is not LP-representable (nor concave)
    assert F.affine_pieces(F.Minimum((a, c))) is None
    assert F.affine_pieces(F.Logs([1.0, 1.0])) is None


def test_a_custom_utility_described_by_a_form_compiles_everywhere():
    from curlopt.utilities.library import curvature_violation
    from curlopt.utilities.library import forms as F

    # -max(y0 + y1 - 1, 2 y0 - 1.5) as Negated(Maximum of two affine pieces): LP pieces and a CVXPY expression
    form = F.Negated(F.AffinePieces([[1.0, 1.0], [2.0, 0.0]], [-1.0, -1.5], "max"))
    u = CustomUtility(2, "concave", value=lambda y: -max(y[0] + y[1] - 1, 2 * y[0] - 1.5), form=form, smooth=False)
    w, c = u.affine_pieces()
    np.testing.assert_array_equal(w, [[-1.0, -1.0], [-2.0, 0.0]])
    np.testing.assert_array_equal(c, [1.0, 1.5])
    assert curvature_violation(u) is None
    cp = pytest.importorskip("cvxpy")
    from curlopt.backends.cvxpy import CvxpyBackend, cvxpy_expression

    assert CvxpyBackend.accepts(u)
    y = cp.Variable(2)
    expr = cvxpy_expression(u, y)
    y.value = np.array([0.3, 0.9])
    assert expr.is_concave() and float(expr.value) == pytest.approx(-0.2)
    with pytest.raises(UtilityError, match="form must be a curlopt.utilities.forms.Form of input length 2"):
        CustomUtility(2, "concave", value=sum, form=F.Logs([1.0]))


def test_a_users_own_expression_comes_before_the_inherited_form():
    cp = pytest.importorskip("cvxpy")
    from curlopt.backends.cvxpy import cvxpy_expression

    class Halved(SumOfLogs):  # value and expression both halved: the inherited form would be wrong
        def value(self, y):
            return super().value(y) / 2

        def cvxpy_expr(self, y):
            return 0.5 * cp.sum(cp.log(y))

    u = Halved(dim=2)
    assert u.has_cvxpy
    y = cp.Variable(2)
    y.value = np.array([math.e, math.e**3])
    assert float(cvxpy_expression(u, y).value) == pytest.approx(2.0)  # (1 + 3) / 2, not 4


def test_a_users_own_pyomo_expression_comes_before_the_inherited_form():
    pyo = pytest.importorskip("pyomo.environ")
    from curlopt.backends.pyomo.expressions import can_express, pyomo_expression

    class Halved(SumOfLogs):
        def value(self, y):
            return super().value(y) / 2

        def pyomo_expr(self, y):
            return 0.5 * sum(pyo.log(yk) for yk in y)

    u = Halved(dim=2)
    model = pyo.ConcreteModel()
    model.y = pyo.Var(range(2), initialize={0: math.e, 1: math.e**3})
    assert can_express(u) and pyo.value(pyomo_expression(u, [model.y[0], model.y[1]])) == pytest.approx(2.0)
    # a kinked form has no single smooth Pyomo expression: the pyomo backend takes its LP rows instead
    assert not can_express(MaxOfLinear([[1.0, 0.0], [0.0, 1.0]])) and not can_express(Norm([0.0], 1.0, ord=1))
