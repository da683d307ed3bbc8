"""The ``reach`` fill: in states the plan does not visit, the actions that return to its support fastest.

Reference values are computed here independently of :func:`curlopt.programs.policy.reach_fill`: closed-form
hitting times of a birth–death chain, a hand-worked chain, and an exhaustive search over every deterministic
policy of small random kernels (each proper policy's hitting times from a dense linear solve).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from curlopt import CMDP, Linear, LinearBound, Norm, build_model
from curlopt.agents import PsCurl, SafeCurl, UcCurl, UcrlCmdp
from curlopt.envs import make
from curlopt.errors import AgentError, CurloptError
from curlopt.experiments import run
from curlopt.programs.policy import (
    UNREACHED_FILLS,
    extract_policy,
    per_step_feasible,
    policy_from_occupancy,
    reach_fill,
)

# -- independent references ---------------------------------------------------------------------------------------


def birth_death_kernel(n_states: int, moves: list[tuple[float, float]]) -> np.ndarray:
    """Dense (S, A, S) kernel: action a steps down w.p. p_a, up w.p. q_a, else stays (``moves[a] = (p_a, q_a)``);
    state 0 cannot go down and the top state cannot go up (the move it cannot make becomes a stay)."""
    S, A = n_states, len(moves)
    kernel = np.zeros((S, A, S))
    for a, (p, q) in enumerate(moves):
        for s in range(S):
            down = p if s > 0 else 0.0
            up = q if s < S - 1 else 0.0
            if s > 0:
                kernel[s, a, s - 1] = down
            if s < S - 1:
                kernel[s, a, s + 1] = up
            kernel[s, a, s] = 1.0 - down - up
    return kernel


def birth_death_steps(n_states: int, p: float, q: float) -> np.ndarray:
    """Expected steps to reach state 0 from each state under one action (p down, q up), reflecting at the top.

    With ``T_k`` the expected time from k to k - 1: ``T_top = 1/p`` and ``T_k = (1 + q T_{k+1}) / p``, whose
    solution is ``T_k = (1/p) (1 - r^(top-k+1)) / (1 - r)`` with ``r = q/p``; then ``h(k) = Σ_{j<=k} T_j``.
    """
    top = n_states - 1
    r = q / p
    k = np.arange(1, n_states)
    passage = (1.0 - r ** (top - k + 1)) / (1.0 - r) / p
    return np.concatenate([[0.0], np.cumsum(passage)])


def exhaustive_steps(kernel: np.ndarray, reached: np.ndarray) -> np.ndarray:
    """Minimal expected steps to ``reached`` from each state, by trying every deterministic policy on the other
    states: the elementwise minimum over the proper ones (spectral radius of the unreached block < 1) of
    ``(I - P_UU)^-1 1``. An SSP with unit costs has one policy optimal in every state, so this is ``h*``."""
    S, A = kernel.shape[:2]
    others = np.flatnonzero(~reached)
    best = np.full(others.size, np.inf)
    for actions in itertools.product(range(A), repeat=others.size):
        block = kernel[others, list(actions)][:, others]
        if np.max(np.abs(np.linalg.eigvals(block))) >= 1 - 1e-12:
            continue  # improper: some state never reaches the support
        best = np.minimum(best, np.linalg.solve(np.eye(others.size) - block, np.ones(others.size)))
    steps = np.zeros(S)
    steps[others] = best
    return steps


def occupancy_on(n_states: int, n_actions: int, states) -> np.ndarray:
    """A plan with mass on ``states`` only (action 0): the support the fill aims at."""
    rho = np.zeros((n_states, n_actions))
    rho[list(states), 0] = 1.0 / len(states)
    return rho


# -- the rule on hand-worked chains --------------------------------------------------------------------------------

MOVES = [(0.3, 0.1), (0.6, 0.1), (0.2, 0.5)]   # action 1 has the fastest drift towards 0 in every state


@pytest.mark.parametrize("n_states", [12, 2001])
def test_birth_death_chain_plays_the_fastest_drift_and_its_hitting_times_are_the_closed_form(n_states):
    kernel = birth_death_kernel(n_states, MOVES)
    rho = occupancy_on(n_states, 3, [0])
    csr = sp.csr_array(kernel.reshape(n_states * 3, n_states))
    policy, mask, fill = extract_policy(rho, None, "reach", kernel=csr, full_output=True)
    assert mask.sum() == n_states - 1 and not fill.stranded.any() and fill.converged
    expected = np.zeros((n_states, 3))
    expected[:, 1] = 1.0
    np.testing.assert_array_equal(policy[1:], expected[1:])
    np.testing.assert_array_equal(policy[0], [1.0, 0.0, 0.0])   # the plan's own row is kept
    np.testing.assert_allclose(fill.steps, birth_death_steps(n_states, 0.6, 0.1), rtol=1e-10)
    # the slowest alternative is indeed slower: its closed form exceeds the rule's everywhere off the support
    assert np.all(birth_death_steps(n_states, 0.3, 0.1)[1:] > fill.steps[1:])


def trap_kernel() -> np.ndarray:
    """States 0..6, two actions; the plan's support is {0}.

    * 1: action 0 reaches 0 w.p. 0.5, else falls into 2; action 1 moves to 3 for sure.
    * 2: reaches 0 w.p. 0.01 per step, else stays (both actions): h(2) = 100.
    * 3: moves to 0 for sure (both actions): h(3) = 1.
      So h(1) = min(1 + 0.5·100, 1 + 1) = 2 by action 1, though action 0 is the one-step greedy choice
      (probability 0.5 of reaching the support next step against 0).
    * 4: absorbing (both actions): cannot reach 0 at all.
    * 5: action 0 reaches 0 or 4 w.p. 0.5 each, action 1 moves to 4: reaches 0 with probability 1/2 at most.
    * 6: action 0 reaches 0 w.p. 0.9, else 4; action 1 reaches 0 w.p. 0.05, else stays: only action 1 reaches 0
      with certainty, h(6) = 20.
    """
    k = np.zeros((7, 2, 7))
    k[0, :, 0] = 1.0
    k[1, 0, 0], k[1, 0, 2], k[1, 1, 3] = 0.5, 0.5, 1.0
    k[2, :, 0], k[2, :, 2] = 0.01, 0.99
    k[3, :, 0] = 1.0
    k[4, :, 4] = 1.0
    k[5, 0, 0], k[5, 0, 4], k[5, 1, 4] = 0.5, 0.5, 1.0
    k[6, 0, 0], k[6, 0, 4], k[6, 1, 0], k[6, 1, 6] = 0.9, 0.1, 0.05, 0.95
    return k


def test_the_shortest_path_beats_the_one_step_greedy_choice_and_stranded_states_stay_uniform():
    kernel = trap_kernel()
    policy, mask, fill = extract_policy(occupancy_on(7, 2, [0]), None, "reach", kernel=kernel, full_output=True)
    np.testing.assert_array_equal(mask, [False] + [True] * 6)
    np.testing.assert_allclose(policy[1], [0.0, 1.0])        # not the greedy action 0
    np.testing.assert_allclose(policy[2], [0.5, 0.5])        # both actions equal: ties are uniform
    np.testing.assert_allclose(policy[3], [0.5, 0.5])
    np.testing.assert_allclose(policy[6], [0.0, 1.0])        # the sure way, not the likely one
    np.testing.assert_array_equal(fill.stranded, [False, False, False, False, True, True, False])
    np.testing.assert_allclose(policy[[4, 5]], 0.5)           # stranded: uniform, and counted
    np.testing.assert_allclose(fill.steps[[0, 1, 2, 3, 6]], [0.0, 2.0, 100.0, 1.0, 20.0], rtol=1e-12)
    assert np.all(np.isinf(fill.steps[[4, 5]]))
    # policy iteration had to leave the first policy (action 0 in state 1: the most probability of moving closer)
    assert fill.iterations >= 2 and fill.converged


@pytest.mark.parametrize("seed", range(6))
def test_random_sparse_kernels_match_the_exhaustive_search_dense_and_csr_alike(seed):
    rng = np.random.default_rng(seed)
    S, A = 7, 3
    kernel = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            successors = rng.choice(S, size=2, replace=False)
            kernel[s, a, successors] = rng.dirichlet([1.0, 1.0])
    reached = np.zeros(S, dtype=bool)
    reached[rng.choice(S, size=2, replace=False)] = True
    rho = occupancy_on(S, A, np.flatnonzero(reached))
    dense_policy, mask, dense_fill = extract_policy(rho, None, "reach", kernel=kernel, full_output=True)
    csr = sp.csr_array(kernel.reshape(S * A, S))
    csr_policy, _, csr_fill = extract_policy(rho, None, "reach", kernel=csr, full_output=True)
    np.testing.assert_array_equal(dense_policy, csr_policy)
    np.testing.assert_array_equal(dense_fill.stranded, csr_fill.stranded)
    np.testing.assert_array_equal(mask, ~reached)
    reference = exhaustive_steps(kernel, reached)
    np.testing.assert_array_equal(np.isinf(reference), dense_fill.stranded)
    ok = ~dense_fill.stranded
    np.testing.assert_allclose(dense_fill.steps[ok], reference[ok], rtol=1e-9)
    # the actions played are exactly those achieving the minimum on the reference's hitting times; a proper
    # action never leads to a stranded state
    with np.errstate(invalid="ignore"):
        q = 1.0 + np.einsum("sat,t->sa", kernel, np.where(np.isinf(reference), 1e300, reference))
    for s in np.flatnonzero(mask & ok):
        best = q[s].min()
        np.testing.assert_array_equal(dense_policy[s] > 0, q[s] <= best * (1 + 1e-9))


def test_the_sparse_input_is_left_untouched_and_bad_kernels_are_refused():
    kernel = trap_kernel()
    coo = sp.coo_array(kernel.reshape(14, 7))
    # with an explicit zero at (s, a) = (2, 0) -> 5, which the fill drops from its own copy only
    csr = sp.csr_array((np.append(coo.data, 0.0), (np.append(coo.row, 4), np.append(coo.col, 5))), shape=(14, 7))
    assert csr.nnz == coo.nnz + 1
    before = (csr.data.copy(), csr.indices.copy(), csr.indptr.copy())
    reach_fill(csr, np.array([True] + [False] * 6))
    for got, was in zip((csr.data, csr.indices, csr.indptr), before, strict=True):
        np.testing.assert_array_equal(got, was)
    rho = occupancy_on(7, 2, [0])
    with pytest.raises(CurloptError, match="needs the kernel the plan was made on"):
        extract_policy(rho, None, "reach")
    with pytest.raises(CurloptError, match="dense .S, A, S. array with S = 7 and A = 2"):
        extract_policy(rho, None, "reach", kernel=np.ones((7, 3, 7)) / 7)
    bad = kernel.copy()
    bad[3, 1, 0] = 0.5
    with pytest.raises(CurloptError, match=r"row \(s, a\) = \(3, 1\) sums to 0.5"):
        extract_policy(rho, None, "reach", kernel=bad)


def test_a_plan_that_reaches_every_state_leaves_nothing_to_fill():
    rho = np.full((7, 2), 1 / 14)
    policy, mask, fill = extract_policy(rho, None, "reach", kernel=trap_kernel(), full_output=True)
    assert not mask.any() and fill is None
    np.testing.assert_array_equal(policy, policy_from_occupancy(rho))


# -- the constraints: only per-step feasible actions on the way back -------------------------------------------------


def cost_model(costs: np.ndarray, constraints, kernel) -> CMDP:
    """A CMDP with one cost signal ``costs`` (S, A) and the given kernel (dense, or CSR (S·A, S) stored sparse)."""
    S, A = costs.shape
    storage = "sparse" if sp.issparse(kernel) else "dense"
    return CMDP(np.zeros((1, S, A)), costs[None], Linear([1.0]), constraints, kernel, storage=storage)


@pytest.mark.filterwarnings("ignore:model 'cmdp' is not ergodic")
@pytest.mark.parametrize("n_states", [12, 2001])
def test_the_fastest_action_breaks_the_constraint_per_step_so_the_slower_feasible_one_is_played(n_states):
    # MOVES: action 1 (p 0.6, q 0.1) is the fastest way down but costs 2 > 1; actions 0 (0.3, 0.1) and 2 (0.2, 0.5)
    # cost 0.5 and 0: feasible per step, and 0 is the faster of them (2 drifts up).
    kernel = birth_death_kernel(n_states, MOVES)
    costs = np.tile([0.5, 2.0, 0.0], (n_states, 1))
    csr = sp.csr_array(kernel.reshape(n_states * 3, n_states))
    model = cost_model(costs, [LinearBound([1.0], 1.0)], csr if n_states > 100 else kernel)
    rho = occupancy_on(n_states, 3, [0])
    policy, mask, fill = extract_policy(rho, model, "reach", kernel=csr, full_output=True)
    assert mask.sum() == n_states - 1 and fill.converged
    assert not (fill.stranded.any() or fill.no_feasible.any() or fill.widened.any())
    np.testing.assert_array_equal(policy[1:], np.tile([1.0, 0.0, 0.0], (n_states - 1, 1)))
    np.testing.assert_allclose(fill.steps, birth_death_steps(n_states, 0.3, 0.1), rtol=1e-10)
    # the cost-blind shortest path (reach-any, or reach without a model) takes action 1, with the closed form of
    # (0.6, 0.1): strictly shorter
    blind, _, blind_fill = extract_policy(rho, model, "reach-any", kernel=csr, full_output=True)
    np.testing.assert_array_equal(blind[1:, 1], 1.0)
    np.testing.assert_allclose(blind_fill.steps, birth_death_steps(n_states, 0.6, 0.1), rtol=1e-10)
    assert np.all(blind_fill.steps[1:] < fill.steps[1:])
    np.testing.assert_array_equal(extract_policy(rho, None, "reach", kernel=csr)[0], blind)


def test_the_queue_drains_at_the_fastest_feasible_service_and_the_slowest_feasible_flow():
    """On the queue, c1 = -10a + 6 >= 0 and c2 = -8(1-b)^2 + 2 >= 0 hold per step exactly for a <= 0.6 and b >= 0.5.
    Of those, (a, b) = (0.6, 0.5) is the only one with a downward drift a - b > 0; its hitting times of 0 come from
    the birth-death recursion below (down a(1-b), up (1-a)b; the full buffer goes down w.p. a), and the Bellman
    equation over the feasible actions checks they are the optimum."""
    L = 60
    model = build_model("queue", buffer=L)
    a = np.repeat([0.2, 0.4, 0.6, 0.8], 4)
    b = np.tile([0.4, 0.5, 0.6, 0.7], 4)
    feasible = (a <= 0.6) & (b >= 0.5)
    np.testing.assert_array_equal(per_step_feasible(model), np.tile(feasible, (L + 1, 1)))
    rho = occupancy_on(L + 1, 16, [0])
    policy, _, fill = extract_policy(rho, model, "reach", kernel=model.kernel, full_output=True)
    best = int(np.flatnonzero((a == 0.6) & (b == 0.5))[0])
    np.testing.assert_array_equal(policy[1:L], np.tile(np.eye(16)[best], (L - 1, 1)))
    # the full buffer admits no one whatever b: there the feasible flows tie at the fastest feasible service
    np.testing.assert_allclose(policy[L], ((a == 0.6) & (b >= 0.5)) / 3)
    down, up = 0.6 * 0.5, 0.4 * 0.5
    passage = np.zeros(L + 1)                 # passage[k]: expected time from k to k - 1
    passage[L] = 1 / 0.6
    for k in range(L - 1, 0, -1):
        passage[k] = (1 + up * passage[k + 1]) / down
    h = np.concatenate([[0.0], np.cumsum(passage[1:])])
    np.testing.assert_allclose(fill.steps, h, rtol=1e-10)
    q = 1 + np.einsum("sat,t->sa", model.kernel, h)
    np.testing.assert_allclose(q[1:, feasible].min(axis=1), h[1:], rtol=1e-10)
    # reach-any serves fastest and admits least: (0.8, 0.4), whose c1 = -2 breaks the first constraint
    blind, _ = extract_policy(rho, model, "reach-any", kernel=model.kernel)
    fastest = int(np.flatnonzero((a == 0.8) & (b == 0.4))[0])
    np.testing.assert_array_equal(blind[1:L], np.tile(np.eye(16)[fastest], (L - 1, 1)))


@pytest.mark.parametrize("seed", range(4))
def test_a_model_without_binding_constraints_is_filled_as_without_a_model(seed):
    rng = np.random.default_rng(seed)
    S, A = 7, 3
    kernel = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            kernel[s, a, rng.choice(S, size=2, replace=False)] = rng.dirichlet([1.0, 1.0])
    rho = occupancy_on(S, A, rng.choice(S, size=2, replace=False))
    costs = rng.uniform(0.0, 1.0, size=(S, A))
    reference = extract_policy(rho, None, "reach", kernel=kernel, full_output=True)
    for constraints in ([], [LinearBound([1.0], 1.0)]):   # none, and one every pair keeps (costs <= 1)
        model = cost_model(costs, constraints, kernel)
        assert per_step_feasible(model).all()
        policy, mask, fill = extract_policy(rho, model, "reach", kernel=kernel, full_output=True)
        np.testing.assert_array_equal(policy, reference[0])
        np.testing.assert_array_equal(mask, reference[1])
        np.testing.assert_array_equal(fill.steps, reference[2].steps)
        np.testing.assert_array_equal(fill.stranded, reference[2].stranded)
        assert not (fill.no_feasible.any() or fill.widened.any())


def test_per_step_feasibility_of_a_constraint_without_affine_pieces():
    """A Euclidean ball ||c - (1, 0)||_2 <= 1 on two cost signals: feasible where the hand-computed distance is at
    most 1 (the boundary point (0, 0) included), through the constraint's own value."""
    costs = np.array([[[0.0, 1.0, 2.5], [0.5, -0.2, 1.0]], [[0.0, 0.9, 0.0], [0.8, 0.0, 0.0]]])   # (d=2, S=2, A=3)
    model = CMDP(np.zeros((1, 2, 3)), costs, Linear([1.0]), [Norm([1.0, 0.0], 1.0)], np.full((2, 3, 2), 0.5))
    assert model.constraints[0].affine_pieces() is None
    distance = np.hypot(costs[0] - 1.0, costs[1])
    np.testing.assert_array_equal(per_step_feasible(model), distance <= 1.0 + 1e-9)
    np.testing.assert_array_equal(per_step_feasible(model), [[True, True, False], [True, False, True]])


def counting_kernel() -> tuple[np.ndarray, np.ndarray]:
    """States 0..7, two actions, support {0}; cost 2 breaks the constraint c <= 1 per step, 0 keeps it.

    * 1: both actions cost 2 (no feasible action): action 0 reaches 0 for sure, h = 1.
    * 2: action 0 (cost 0) stays for ever; action 1 (cost 2) reaches 0 w.p. 1/2: widened, h = 2 by action 1.
    * 3: action 0 (cost 0) moves to 2, action 1 (cost 2) reaches 0 w.p. 1/4: either way back plays one
      infeasible action, and its own one is the shorter way, so it is widened too; over all actions action 0 is
      fastest all the same (1 + 2 = 3 < 4).
    * 4: action 0 (cost 0) reaches 0 w.p. 0.2 (h = 5), action 1 (cost 2) for sure (h = 1): the slower feasible one.
    * 5: absorbing, both actions cost 0: stranded.
    * 6: absorbing, both actions cost 2: no feasible action, and stranded.
    * 7: action 0 (cost 0) moves to 2, action 1 (cost 2) to 3: its way back through 2 plays one infeasible action
      (2's), through 3 two, so it keeps to its feasible action though 2 is widened: h = 1 + 2 = 3.
    """
    k = np.zeros((8, 2, 8))
    k[0, :, 0] = 1.0
    k[1, 0, 0], k[1, 1, 1] = 1.0, 1.0
    k[2, 0, 2], k[2, 1, 0], k[2, 1, 2] = 1.0, 0.5, 0.5
    k[3, 0, 2], k[3, 1, 0], k[3, 1, 3] = 1.0, 0.25, 0.75
    k[4, 0, 0], k[4, 0, 4], k[4, 1, 0] = 0.2, 0.8, 1.0
    k[5, :, 5] = 1.0
    k[6, :, 6] = 1.0
    k[7, 0, 2], k[7, 1, 3] = 1.0, 1.0
    costs = np.array([[0, 0], [2, 2], [0, 2], [0, 2], [0, 2], [0, 0], [2, 2], [0, 2]], dtype=float)
    return k, costs


COUNTED_ROWS = [[1, 0], [0, 1], [1, 0], [1, 0], [0.5, 0.5], [0.5, 0.5], [1, 0]]   # states 1..7


@pytest.mark.filterwarnings("ignore:model 'cmdp' is not ergodic")
def test_states_without_a_feasible_way_back_are_widened_and_counted():
    kernel, costs = counting_kernel()
    model = cost_model(costs, [LinearBound([1.0], 1.0)], kernel)
    policy, mask, fill = extract_policy(occupancy_on(8, 2, [0]), model, "reach", kernel=kernel, full_output=True)
    np.testing.assert_array_equal(np.flatnonzero(fill.no_feasible), [1, 6])
    np.testing.assert_array_equal(np.flatnonzero(fill.widened), [2, 3])
    np.testing.assert_array_equal(np.flatnonzero(fill.stranded), [5, 6])
    np.testing.assert_allclose(fill.steps[[0, 1, 2, 3, 4, 7]], [0.0, 1.0, 2.0, 3.0, 5.0, 3.0], rtol=1e-12)
    np.testing.assert_allclose(policy[1:], COUNTED_ROWS)
    assert fill.converged


@pytest.mark.filterwarnings("ignore:model 'cmdp' is not ergodic")
@pytest.mark.parametrize("n_states", [10, 1001])
def test_a_top_state_that_only_stays_widens_itself_and_no_state_below(n_states):
    """The birth-death chain of MOVES[:2] with the top state's feasible action 0 a self-loop (as a plug-in estimate
    whose only observations there were stays): only the top is widened, plays the infeasible action 1 (down w.p.
    0.6), and every other state keeps to action 0. Reference: the chain of that policy solved densely, and the
    Bellman equation over each state's candidates."""
    kernel = birth_death_kernel(n_states, MOVES[:2])
    top = n_states - 1
    kernel[top, 0] = np.eye(n_states)[top]
    costs = np.tile([0.0, 2.0], (n_states, 1))
    csr = sp.csr_array(kernel.reshape(n_states * 2, n_states))
    model = cost_model(costs, [LinearBound([1.0], 1.0)], csr)
    policy, _, fill = extract_policy(occupancy_on(n_states, 2, [0]), model, "reach", kernel=csr, full_output=True)
    np.testing.assert_array_equal(np.flatnonzero(fill.widened), [top])
    assert not (fill.no_feasible.any() or fill.stranded.any())
    np.testing.assert_array_equal(policy[1:top], np.tile([1.0, 0.0], (top - 1, 1)))
    np.testing.assert_array_equal(policy[top], [0.0, 1.0])
    chosen = np.array([0] * top + [1])
    chain = kernel[np.arange(n_states), chosen][1:, 1:]
    h = np.concatenate([[0.0], np.linalg.solve(np.eye(top) - chain, np.ones(top))])
    np.testing.assert_allclose(fill.steps, h, rtol=1e-9)
    q = 1 + np.einsum("sat,t->sa", kernel, h)
    np.testing.assert_allclose(q[1:top, 0], h[1:top], rtol=1e-9)          # action 0 is what they play ...
    np.testing.assert_allclose(q[top].min(), h[top], rtol=1e-9)           # ... and the top its best action


# -- the other fills are unchanged ----------------------------------------------------------------------------------


def test_the_other_fills_ignore_the_kernel_and_keep_their_two_outputs():
    assert UNREACHED_FILLS == ("uniform", "safe", "reach", "reach-any")
    costs = np.zeros((1, 7, 2))
    costs[0, :, 1] = 1.0      # action 0 is the cheap one: the safe fill plays it
    model = CMDP(np.zeros((1, 7, 2)), costs, Linear([1.0]), [LinearBound([1.0], 1.0)], trap_kernel() * 0 + 1 / 7)
    rho = occupancy_on(7, 2, [0])
    for fill, row in (("uniform", [0.5, 0.5]), ("safe", [1.0, 0.0])):
        plain = extract_policy(rho, model, fill)
        assert len(plain) == 2
        with_kernel = extract_policy(rho, model, fill, kernel=trap_kernel(), full_output=True)
        np.testing.assert_array_equal(plain[0], with_kernel[0])
        np.testing.assert_array_equal(plain[1], with_kernel[1])
        assert with_kernel[2] is None
        np.testing.assert_array_equal(plain[0][1:], np.tile(row, (6, 1)))


# -- agents ---------------------------------------------------------------------------------------------------------


def greedy_model() -> CMDP:
    """3 states, 3 actions: action a moves to state a w.p. 0.8 (else 0.1 each); reward 1 only at (0, 0). Early
    plans put all their mass on (0, 0), leaving states 1 and 2 unreached."""
    kernel = np.full((3, 3, 3), 0.1)
    for a in range(3):
        kernel[:, a, a] = 0.8
    rewards = np.zeros((1, 3, 3))
    rewards[0, 0, 0] = 1.0
    costs = np.tile([0.2, 0.0, 0.9], (1, 3, 1))
    return CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], 5.0)], kernel, initial=[1.0, 0.0, 0.0])


def settling_model() -> CMDP:
    """greedy_model, stored sparse, with (0, 0) a sure self-loop: its declared support keeps every kernel the agents
    plan on (posterior draws included) from leaving state 0 under action 0, so the plans that take reward 1 at
    (0, 0) leave states 1 and 2 unreached whatever the draw."""
    kernel = np.full((3, 3, 3), 0.1)
    for a in range(3):
        kernel[:, a, a] = 0.8
    kernel[0, 0] = [1.0, 0.0, 0.0]
    rewards = np.zeros((1, 3, 3))
    rewards[0, 0, 0] = 1.0
    costs = np.tile([0.2, 0.0, 0.9], (1, 3, 1))
    return CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], 5.0)], kernel, initial=[1.0, 0.0, 0.0],
                storage="sparse")


def recording(agent):
    """Wrap ``agent.planning_kernel`` to keep what it returned at each plan."""
    seen = []
    inner = agent.planning_kernel

    def record():
        seen.append(inner())
        return seen[-1]

    agent.planning_kernel = record
    return seen


@pytest.mark.filterwarnings("ignore:model 'cmdp' is not ergodic")   # states 1, 2 are transient by design
@pytest.mark.parametrize("make_agent", [
    # support="model": counts on the kernel's nonzero pattern (what the test reads back), at this small size too
    lambda m: UcCurl(m, unreached="reach", support="model"),
    lambda m: PsCurl(m, unreached="reach", seed=3, support="model"),
    lambda m: SafeCurl(m, unreached="reach", seed=3, support="model"),
    lambda m: UcrlCmdp(m, horizon=40, unreached="reach", support="model"),
])
def test_agents_fill_with_the_shortest_path_on_the_kernel_they_planned_on(make_agent):
    model = settling_model()
    allowed = model.kernel > 0
    agent = make_agent(model)
    seen = recording(agent)
    plans = []
    plan_from = agent._plan_from

    def record_plan(result, eps):
        counts, before = agent.counts.toarray().reshape(3, 3, 3), len(seen)
        plan = plan_from(result, eps)
        if len(seen) > before:   # a plan from an occupancy: the fill read the kernel once
            held = getattr(agent.program, "kernel", None)
            plans.append((counts, np.clip(result.occupancy, 0, None), seen[-1], held, plan.policy))
        return plan

    agent._plan_from = record_plan
    trace = run(agent, make(model), 40, seed=0, progress=False)
    assert trace.meta["unreached"] == "reach"
    assert len(plans) == sum(e.unreached is not None for e in trace.epochs) > 0
    filled = 0
    for counts, rho, kernel, held, policy in plans:
        assert sp.issparse(kernel) and kernel.shape == (9, 3)    # on the model's sparse support
        dense = kernel.toarray().reshape(3, 3, 3)
        if isinstance(agent, (UcCurl, UcrlCmdp)):
            # the posterior mean of the counts the epoch planned with: (n + 1) / (N + k) over the declared successors
            expected = (counts + allowed) / (counts.sum(axis=2, keepdims=True) + allowed.sum(axis=2, keepdims=True))
            np.testing.assert_allclose(dense, expected, rtol=1e-12)
        else:
            assert kernel is held      # the posterior sample the program planned on
        mask = ~(rho.sum(axis=1) > 1e-8 * 3)
        if not mask.any() or mask.all():
            continue
        reference = exhaustive_steps(dense, ~mask)
        q = 1.0 + np.einsum("sat,t->sa", dense, reference)
        for s in np.flatnonzero(mask):
            best = q[s] <= q[s].min() * (1 + 1e-9)
            np.testing.assert_allclose(policy[s], best / best.sum(), atol=1e-12)
            filled += 1
    assert filled > 0


def test_uc_curl_reach_rows_are_the_exhaustive_optimum_on_its_estimate():
    """On the greedy model the first plans put all mass on (0, 0): the rows of states 1 and 2 are the reach fill on
    the plug-in estimate, checked against the exhaustive search of that estimate."""
    model = greedy_model()
    agent = UcCurl(model, trigger="doubling", unreached="reach")
    seen = recording(agent)
    trace = run(agent, make(model), 30, seed=0, progress=False)
    assert [e.unreached for e in trace.epochs] == [2] * len(trace.epochs)
    reached = np.array([True, False, False])
    reference = exhaustive_steps(np.asarray(seen[-1]), reached)
    q = 1.0 + np.einsum("sat,t->sa", np.asarray(seen[-1]), reference)
    for s in (1, 2):
        best = q[s] <= q[s].min() * (1 + 1e-9)
        np.testing.assert_allclose(agent.policy[s], best / best.sum(), atol=1e-12)
    np.testing.assert_allclose(agent.policy[0], [1.0, 0.0, 0.0], atol=1e-9)


def counting_kernel_and_a_model_that_returns_to_zero():
    """counting_kernel, and a model with its costs where every state moves to 0, which keeps itself (reward 1 at
    (0, 0), the start): every plan puts its mass on (0, 0) and leaves states 1..7 to the fill."""
    kernel, costs = counting_kernel()
    rewards = np.zeros((1, 8, 2))
    rewards[0, 0, 0] = 1.0
    to_zero = np.zeros((8, 2, 8))
    to_zero[:, :, 0] = 1.0
    model = CMDP(rewards, costs[None], Linear([1.0]), [LinearBound([1.0], 1.0)], to_zero, initial=np.eye(8)[0],
                 storage="sparse")
    return kernel, model


@pytest.mark.filterwarnings("ignore:model 'cmdp' is not ergodic")
def test_reach_any_plays_the_fastest_way_back_whatever_it_costs_and_never_computes_feasibility():
    kernel, model = counting_kernel_and_a_model_that_returns_to_zero()
    agent = UcCurl(model, unreached="reach-any")
    agent.planning_kernel = lambda: kernel
    trace = run(agent, make(model), 10, seed=0, progress=False)
    assert agent._feasible is None                       # the per-step table is for "reach" only
    reference = exhaustive_steps(kernel[:5], np.eye(5)[0].astype(bool))   # states 0..4 lead only among themselves
    q = 1.0 + np.einsum("sat,t->sa", kernel[:5, :, :5], reference)
    for s in range(1, 5):
        best = q[s] <= q[s].min() * (1 + 1e-9)
        np.testing.assert_allclose(agent.policy[s], best / best.sum())
    assert "per-step feasible" not in trace.epochs[0].message
    assert "2 of the 7 unreached states cannot reach the plan's support" in trace.epochs[0].message


def test_the_other_fills_never_ask_for_a_kernel():
    model = greedy_model()
    for fill in ("uniform", "safe"):
        agent = UcCurl(model, unreached=fill)

        def refuse():
            raise AssertionError("planning_kernel read for a fill that does not use it")

        agent.planning_kernel = refuse
        trace = run(agent, make(model), 20, seed=0, progress=False)
        assert all(e.message == "" for e in trace.epochs)


def test_stranded_states_are_reported_in_the_epoch_message():
    model = greedy_model()
    agent = UcCurl(model, unreached="reach")
    absorbing = np.tile(np.eye(3)[:, None, :], (1, 3, 1))     # every state keeps itself: none reaches the plan's
    agent.planning_kernel = lambda: absorbing
    trace = run(agent, make(model), 10, seed=0, progress=False)
    epoch = trace.epochs[0]
    assert epoch.unreached == 2
    assert "reach fill: 2 of the 2 unreached states cannot reach the plan's support" in epoch.message
    np.testing.assert_allclose(agent.policy[1:], 1 / 3)


@pytest.mark.filterwarnings("ignore:model 'cmdp' is not ergodic")
def test_the_counts_of_the_constrained_fill_are_in_the_epoch_message():
    """counting_kernel's costs on a model where every state moves to 0, which keeps itself (reward 1 at (0, 0), the
    start): every plan puts its mass on (0, 0), leaving states 1..7 to the fill, made on counting_kernel itself."""
    kernel, model = counting_kernel_and_a_model_that_returns_to_zero()
    agent = UcCurl(model, unreached="reach")
    agent.planning_kernel = lambda: kernel
    trace = run(agent, make(model), 10, seed=0, progress=False)
    epoch = trace.epochs[0]
    assert epoch.unreached == 7
    for part in ("reach fill: 2 of the 7 unreached states have no per-step feasible action",
                 "reach fill: 2 of the 7 unreached states need an action that is not per-step feasible on the way"
                 " back to the plan's support; all their actions were candidates",
                 "reach fill: 2 of the 7 unreached states cannot reach the plan's support with certainty by any action"):
        assert part in epoch.message
    np.testing.assert_allclose(agent.policy[1:], COUNTED_ROWS)


@pytest.mark.parametrize("fill", ["reach", "reach-any"])
@pytest.mark.parametrize("name", ["ps-curl", "uc-curl", "safe-curl"])
def test_agents_with_reach_run_on_the_small_queue(name, fill):
    from curlopt.agents import make_agent

    model = build_model("queue")
    agent = make_agent(name, model, unreached=fill, seed=0)
    assert agent.describe()["unreached"] == fill
    trace = run(agent, make(model), 400, seed=0, progress=False)
    assert trace.meta["unreached"] == fill
    assert all(np.isfinite(e.exact_objective) for e in trace.epochs if e.exact_objective is not None)
    np.testing.assert_allclose(agent.policy.sum(axis=1), 1.0)


def test_an_unknown_fill_names_reach_among_the_choices():
    with pytest.raises(AgentError, match="'uniform', 'safe', 'reach', 'reach-any'"):
        UcCurl(greedy_model(), unreached="nearest")
