"""The utility library: values against closed forms, derivatives against finite differences,
CVXPY and Pyomo expressions and affine pieces against the numpy value, and validation."""

from __future__ import annotations

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
    expr = utility.cvxpy_expr(y_var)
    assert expr.is_concave() if utility.curvature == "concave" else expr.is_convex()
    for y in points():
        y_var.value = y
        assert float(expr.value) == pytest.approx(utility.value(y), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("utility", [u for u in library() if u.smooth], ids=repr)
def test_pyomo_expression_matches_value(utility):
    pyo = pytest.importorskip("pyomo.environ")
    for y in points(3):
        model = pyo.ConcreteModel()
        model.y = pyo.Var(range(3), initialize=dict(enumerate(y)))
        expr = utility.pyomo_expr([model.y[i] for i in range(3)])
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
    from curlopt.utilities import curvature_violation

    assert curvature_violation(utility) is None


def test_a_utility_lying_about_its_curvature_is_caught():
    from curlopt.utilities import curvature_violation

    # f(y) = y0^2 + y1^2 is convex; declared concave it must be caught (Hessian 2I has eigenvalue 2 > 0)
    liar = CustomUtility(2, "concave", value=lambda y: float((y**2).sum()), gradient=lambda y: 2 * y,
                         hessian=lambda y: 2 * np.eye(2))
    point, eigenvalue = curvature_violation(liar)
    assert eigenvalue == pytest.approx(2.0)
