"""The model-free agents: Triple-Q (episodic) and Triple-QA (infinite horizon).

Their updates are checked against the papers' recursions written out here by hand, step by step, on a 2-state,
2-action model whose signals are already in [0, 1] (so the agents' scaling is the identity and the numbers below are
the recursions' own): the Q- and utility tables, the queue after a frame, and the policy that follows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from curlopt.agents import AGENTS, TripleQA, make_agent
from curlopt.agents.episodic import EPISODIC_AGENTS, TripleQ, make_episodic_agent
from curlopt.envs import TabularCMDPEnv
from curlopt.errors import AgentError
from curlopt.experiments.simulation.episodes import run_episodes
from curlopt.experiments.simulation.loop import run
from curlopt.models import build_model
from curlopt.models.cmdp import CMDP
from curlopt.models.episodic import EpisodicCMDP
from curlopt.utilities.library import Linear, LinearBound, SumOfLogs

# r(s, a) in [0, 1] with min 0 and max 1; c(s, a) in [0, 1] with min 0 and max 1: the utility 1 − c is in [0, 1]
REWARDS = np.array([[0.0, 1.0], [0.5, 0.0]])
COSTS = np.array([[1.0, 0.0], [0.0, 0.5]])
KERNEL = np.full((2, 2, 2), 0.5)


def episodic_model(budget: float = 1.0) -> EpisodicCMDP:
    return EpisodicCMDP(REWARDS, COSTS, Linear([1.0]), [LinearBound([1.0], budget)], kernel=KERNEL,
                        initial=[0.5, 0.5], horizon=2)


def average_model(budget: float = 0.5) -> CMDP:
    return CMDP(REWARDS, COSTS, Linear([1.0]), [LinearBound([1.0], budget)], KERNEL)


# -- Triple-Q -------------------------------------------------------------------------------------------------------


def test_triple_q_reads_the_model_in_the_papers_form():
    agent = TripleQ(episodic_model(budget=1.0), episodes=4)
    assert np.array_equal(agent.reward, np.broadcast_to(REWARDS, (2, 2, 2)))
    assert np.array_equal(agent.utilities[0], np.broadcast_to(1.0 - COSTS, (2, 2, 2)))
    # Σ_h c_h <= 1 over H = 2 steps  ⟺  Σ_h (1 − c_h) >= 2 − 1 = 1
    assert agent.thresholds.tolist() == [1.0]


def test_triple_q_updates_follow_the_recursion_written_out():
    # χ = 1: α_1 = 1, α_2 = 2/3; ι = 1, bonus 1/4, H = 2: b_t = ¼ √(4 · 2/(1 + t)), b_1 = 0.5, b_2 = 0.5 √(2/3);
    # η = 2, ε = 2.5, K = 4 with α = 0.5: frames of 2 episodes
    agent = TripleQ(episodic_model(), episodes=4, frame_exponent=0.5, chi=1.0, eta=2.0, iota=1.0, epsilon=2.5)
    agent.reset(0)
    assert agent.frame == 2
    b1 = 0.5
    # episode 1: every table at H = 2 and Z = 0: every action a maximiser at every step and state
    plan = agent.begin_episode(1)
    assert np.array_equal(plan.policy, np.full((2, 2, 2), 0.5))
    assert plan.source == "update-rule"
    agent.end_episode(np.array([0, 1]), np.array([1, 0]))
    # h = 1, (s, a) = (0, 1) -> s' = 1, t = 1: Q = r + V_2(1) + b_1 = 1 + 2 + 0.5; C = g + W_2(1) + b_1 = 1 + 2 + 0.5
    assert agent.q[0, 0, 1] == pytest.approx(3.5) and agent.c[0, 0, 0, 1] == pytest.approx(3.5)
    assert agent.v[0, 0] == pytest.approx(3.5)            # argmax of Q_1(0, ·) = (2, 3.5) is a = 1
    # h = 2, (s, a) = (1, 0), last step: Q = r + b_1 = 0.5 + 0.5; C = g + b_1 = 1 + 0.5; V_2(1) = max(1, 2) = 2
    assert agent.q[1, 1, 0] == pytest.approx(1.0) and agent.c[0, 1, 1, 0] == pytest.approx(1.5)
    assert agent.v[1, 1] == pytest.approx(2.0) and agent.w[0, 1, 1] == pytest.approx(2.0)
    # episode 2 plays the greedy policy: a = 1 at (h=1, s=0), a = 1 at (h=2, s=1), ties elsewhere
    policy = agent.begin_episode(2).policy
    assert policy[0, 0].tolist() == [0.0, 1.0] and policy[1, 1].tolist() == [0.0, 1.0]
    assert policy[0, 1].tolist() == [0.5, 0.5] and policy[1, 0].tolist() == [0.5, 0.5]
    agent.end_episode(np.array([0, 0]), np.array([1, 1]))
    # after the frame (2 episodes) the tables are reset (the second visit's update is checked in the next test);
    # C̄ = C_1(0, 1) at the start of episode 1 (2) + at the start of episode 2 (3.5) = 5.5;
    # Z = (0 + ρ + ε − C̄/2)^+ = (1 + 2.5 − 2.75)^+ = 0.75
    assert agent.queue_history[0].tolist() == pytest.approx([0.75])
    assert np.all(agent.q == 2.0) and np.all(agent.frame_visits == 0)
    # episode 3: pseudo-Q = Q + (Z/η) C = 2 + 0.375 · 2 everywhere: uniform
    assert np.array_equal(agent.begin_episode(3).policy, np.full((2, 2, 2), 0.5))
    agent.end_episode(np.array([1, 0]), np.array([0, 0]))
    # h = 1, (1, 0) -> 0: Q = 0.5 + 2 + b_1 = 3, C = 1 + 2 + b_1 = 3.5; pseudo (a = 0) 3 + 0.375 · 3.5 = 4.3125
    # against (a = 1) 2 + 0.375 · 2 = 2.75
    assert agent.q[0, 1, 0] == pytest.approx(3.0) and agent.c[0, 0, 1, 0] == pytest.approx(3.5)
    assert agent.v[0, 1] == pytest.approx(3.0) and agent.w[0, 0, 1] == pytest.approx(3.5)
    # h = 2, (0, 0), last step: Q = 0 + b_1, C = 0 + b_1; pseudo 0.5 + 0.1875 < 2.75: V_2(0) stays Q_2(0, 1) = 2
    assert agent.q[1, 0, 0] == pytest.approx(b1) and agent.v[1, 0] == pytest.approx(2.0)
    policy = agent.begin_episode(4).policy
    assert policy[0, 1].tolist() == [1.0, 0.0] and policy[1, 0].tolist() == [0.0, 1.0]


def test_triple_q_second_visit_uses_the_learning_rate_and_the_smaller_bonus():
    agent = TripleQ(episodic_model(), episodes=100, frame_exponent=1.0, chi=1.0, eta=2.0, iota=1.0, epsilon=0.0)
    agent.reset(0)
    b2 = 0.5 * math.sqrt(2 / 3)
    for _ in range(2):
        agent.begin_episode(agent.episode + 1)
        agent.end_episode(np.array([0, 1]), np.array([1, 0]))
    # t = 2 at (h=1, s=0, a=1): (1/3) 3.5 + (2/3)(1 + V_2(1) + b_2), V_2(1) = 2 after episode 1
    assert agent.q[0, 0, 1] == pytest.approx(3.5 / 3 + 2 / 3 * (1 + 2 + b2))
    # t = 2 at (h=2, s=1, a=0): (1/3) 1 + (2/3)(0.5 + b_2)
    assert agent.q[1, 1, 0] == pytest.approx(1 / 3 + 2 / 3 * (0.5 + b2))


def test_triple_q_bonus_frame_change_keeps_the_cells_at_most_h():
    # the same two episodes as above with η = 100: after the frame Q += 4H/η = 0.08, and a cell whose reward or
    # utility value then exceeds H = 2 goes back to 2 (every cell never visited: 2.08 > 2)
    agent = TripleQ(episodic_model(), episodes=4, frame_exponent=0.5, chi=1.0, eta=100.0, iota=1.0, epsilon=2.5,
                    frame_reset="bonus")
    agent.reset(0)
    for states, actions in (([0, 1], [1, 0]), ([0, 0], [1, 1])):
        agent.begin_episode(agent.episode + 1)
        agent.end_episode(np.array(states), np.array(actions))
    # (h=2, s=1, a=0): Q = 1.0, C = 1.5 after episode 1 -> Q = 1.08, C kept; (h=2, s=0, a=1): Q = C = 1.5 after
    # episode 2 -> 1.58; (h=1, s=0, a=1): Q ≈ 3.44 > 2 -> 2
    assert agent.q[1, 1, 0] == pytest.approx(1.08) and agent.c[0, 1, 1, 0] == pytest.approx(1.5)
    assert agent.q[1, 0, 1] == pytest.approx(1.58) and agent.q[0, 0, 1] == 2.0 and agent.q[0, 1, 0] == 2.0
    # Z = 0.75, Z/η = 0.0075: at (h=2, s=1) the pseudo-Q is (1.08 + 0.0075 · 1.5, 2 + 0.0075 · 2): V = W = 2
    assert agent.v[1, 1] == 2.0 and agent.w[0, 1, 1] == 2.0
    assert np.all(agent.frame_visits == 0) and agent.utility_sum.tolist() == [0.0]


def test_triple_q_remaining_initial_value_starts_each_step_at_the_steps_left():
    # H = 2: the step-1 tables start at 2, the step-2 tables at 1 (H − h + 1); χ = 1, ι = 1: b_1 = 0.5
    agent = TripleQ(episodic_model(), episodes=4, frame_exponent=0.5, chi=1.0, eta=2.0, iota=1.0, epsilon=2.5,
                    initial_value="remaining")
    agent.reset(0)
    assert np.all(agent.q[0] == 2.0) and np.all(agent.q[1] == 1.0) and np.all(agent.c[0, 1] == 1.0)
    assert agent.v[:, 0].tolist() == [2.0, 1.0, 0.0]
    agent.begin_episode(1)
    agent.end_episode(np.array([0, 1]), np.array([1, 0]))
    # h = 1, (0, 1) -> 1: Q = r + V_2(1) + b_1 = 1 + 1 + 0.5 and C = g + W_2(1) + b_1 = 1 + 1 + 0.5 (V_2 = W_2 = 1
    # before this episode's step-2 update, which step 1 does not see)
    assert agent.q[0, 0, 1] == pytest.approx(2.5) and agent.c[0, 0, 0, 1] == pytest.approx(2.5)
    # h = 2, (1, 0): Q = 0.5 + b_1 = 1.0 ties the untried Q_2(1, 1) = 1: the first maximiser a = 0 sets V and W
    assert agent.q[1, 1, 0] == pytest.approx(1.0) and agent.c[0, 1, 1, 0] == pytest.approx(1.5)
    assert agent.v[1, 1] == pytest.approx(1.0) and agent.w[0, 1, 1] == pytest.approx(1.5)


def test_triple_q_bonus_frame_change_caps_at_the_steps_left():
    # as in the bonus test above with initial_value="remaining": the caps are 2 at step 1 and 1 at step 2
    agent = TripleQ(episodic_model(), episodes=4, frame_exponent=0.5, chi=1.0, eta=100.0, iota=1.0, epsilon=2.5,
                    frame_reset="bonus", initial_value="remaining")
    agent.reset(0)
    for states, actions in (([0, 1], [1, 0]), ([0, 0], [1, 1])):
        agent.begin_episode(agent.episode + 1)
        agent.end_episode(np.array(states), np.array(actions))
    # (h=2, s=1, a=0): C = 1.5 > 1 -> both tables back to 1; (h=2, s=0, a=0), never visited: Q = 1.08 > 1 -> 1
    assert agent.q[1, 1, 0] == 1.0 and agent.c[0, 1, 1, 0] == 1.0 and agent.q[1, 0, 0] == 1.0
    # (h=1, s=1, a=0), never visited: 2.08 > 2 -> 2
    assert agent.q[0, 1, 0] == 2.0 and np.all(agent.q[1] <= 1.0) and np.all(agent.q[0] <= 2.0)


def test_triple_q_runs_through_the_episode_loop():
    model = episodic_model()
    agent = make_episodic_agent("triple-q", model)
    trace = run_episodes(model, agent, 50, seed=3)
    assert set(trace.sources) == {"update-rule"}
    assert trace.summary["episodes"] == 50 and agent.episode == 50
    # K = 50 set by the loop: the paper's frames of floor(50^0.6) = 10 episodes, 5 queue updates
    assert agent.frame == 10 and len(agent.queue_history) == 5
    again = run_episodes(model, make_episodic_agent("triple-q", model), 50, seed=3)
    assert np.array_equal(trace.columns["regret"], again.columns["regret"])


def test_triple_q_is_registered_and_refuses_bad_inputs():
    assert EPISODIC_AGENTS["triple-q"] is TripleQ
    with pytest.raises(AgentError, match="frame_exponent"):
        TripleQ(episodic_model(), frame_exponent=1.5)
    with pytest.raises(AgentError, match="frame_reset"):
        TripleQ(episodic_model(), frame_reset="never")
    with pytest.raises(AgentError, match="initial_value"):
        TripleQ(episodic_model(), initial_value="zero")
    with pytest.raises(AgentError, match="eta"):
        TripleQ(episodic_model(), eta=0.0)
    with pytest.raises(AgentError, match="epsilon"):
        TripleQ(episodic_model(), epsilon=-1.0)
    with pytest.raises(AgentError, match="episodic model"):
        TripleQ(average_model())
    with pytest.raises(AgentError, match="non-linear objective"):
        TripleQ(EpisodicCMDP(REWARDS, COSTS, SumOfLogs(weights=[1.0]), [LinearBound([1.0], 1.0)], kernel=KERNEL,
                             horizon=2))
    with pytest.raises(AgentError, match="has none"):
        TripleQ(EpisodicCMDP(REWARDS, COSTS, Linear([1.0]), [], kernel=KERNEL, horizon=2))
    with pytest.raises(AgentError, match="triple-q solves no program: it takes no backend"):
        make_episodic_agent("triple-q", episodic_model(), backend="highs")


# -- Triple-QA ------------------------------------------------------------------------------------------------------


def hand_agent() -> TripleQA:
    # T = 9 and β = 0.5: frames of 3 steps; H = 2 (γ = 0.5); χ = 1; ι = 0.02, κ = 1: b_1 = √(2 · 0.02/2) = √0.02
    return TripleQA(average_model(), horizon=9, discount_horizon=2.0, chi=1.0, eta=2.0, iota=0.02, epsilon=1.5,
                    frame_exponent=0.5)


def check_first_frame(agent: TripleQA) -> None:
    # (checked after the frame: the tables are back at H, the queue holds what the frame learned)
    # step 1: (0, 1) -> 1: Q = 1 + 0.5 · 2 + b_1 > Q̂ = 2: no monotone update
    # step 2: (1, 1) -> 1: Q = 0 + 1 + b_1, C = 0.5 + 1 + b_1, both below 2: Q̂, Ĉ take them; at s = 1 the
    # pseudo-Q (Z = 0) is (2, 1 + b_1): greedy a = 0 and V̂(1) = Q̂(1, 0) = 2
    # step 3: (1, 0) -> 0 (the greedy action whatever the uniform): C = 1 + 1 + b_1 > 2: no monotone update
    # C̄ = Σ (1 − γ) Ĉ(s, a) before each step's update = 3 · 0.5 · 2 = 3; Z = (0 + ρ + ε − C̄/3)^+ = 0.5 + 1.5 − 1
    assert agent.queue_history == [pytest.approx([1.0])]
    assert agent.q == [2.0] * 4 and agent.frame_visits == [0] * 4


def test_triple_qa_step_updates_follow_the_recursion_written_out():
    agent = hand_agent()
    agent.reset(0)
    assert agent.frame == 3 and agent.gamma == 0.5 and agent.thresholds.tolist() == [0.5]
    b1 = math.sqrt(0.02)
    assert agent.act(0, 0.9) == 1                 # every action a maximiser at the start: the uniform picks a = 1
    agent.observe(0, 1, 1)
    assert agent.q[1] == pytest.approx(2 + b1) and agent.q_hat[1] == 2.0
    assert agent.act(1, 0.7) == 1
    agent.observe(1, 1, 1)
    assert agent.q_hat[3] == pytest.approx(1 + b1) and agent.c_hat[0][3] == pytest.approx(1.5 + b1)
    assert agent._greedy[1] == (0,) and agent.v_hat[1] == 2.0
    assert agent.act(1, 0.99) == 0
    agent.observe(1, 0, 0)
    check_first_frame(agent)
    # the new frame: every table at H = 2, Z/η = 0.5: every action a maximiser again
    assert np.array_equal(agent.current_policy(), np.full((2, 2), 0.5))
    assert agent.act(0, 0.1) == 0
    agent.observe(0, 0, 0)
    # (0, 0) -> 0: Q = 0 + 1 + b_1, C = 0 + 1 + b_1, both below 2; pseudo at s = 0: (1 + b_1)(1 + 0.5) against
    # 2 + 0.5 · 2 = 3: greedy a = 1, V̂(0) = Q̂(0, 1) = 2
    assert agent.q_hat[0] == pytest.approx(1 + b1) and agent._greedy[0] == (1,) and agent.v_hat[0] == 2.0
    assert np.array_equal(agent.current_policy()[0], [0.0, 1.0])


def test_triple_qa_fast_steps_equal_the_step_by_step_updates():
    agent = hand_agent()
    agent.reset(0)
    rows = [[0.5, 2.0]] * 4                      # a uniform below 0.5 moves to state 0, else to state 1
    pairs, state = agent.play_steps(0, [0.9, 0.7, 0.99], [0.7, 0.7, 0.2], rows, None)
    assert pairs == [1, 3, 2] and state == 0
    check_first_frame(agent)
    pairs, state = agent.play_steps(0, [0.1, 0.3], [0.2, 0.7], rows, None)
    assert pairs == [0, 1] and state == 1       # the second step plays the greedy a = 1 whatever its uniform
    assert agent.q_hat[0] == pytest.approx(1 + math.sqrt(0.02)) and agent.steps_played == 5


def test_triple_qa_runs_through_the_loop_identically_on_both_paths():
    model = build_model("queue")
    traces = [run(make_agent("triple-qa", model, horizon=3000), TabularCMDPEnv(model), 3000, seed=2, path=path,
                  progress=False) for path in ("fast", "generic")]
    fast, generic = traces
    for name in ("rewards", "costs", "violation"):
        assert np.array_equal(fast.checkpoints[name], generic.checkpoints[name])
    # frames of floor(3000^(2/3)) = 208 steps are the loop's epochs; no single policy to evaluate exactly
    assert [e.length for e in fast.epochs[:-1]] == [208] * (len(fast.epochs) - 1)
    assert all(e.source == "update-rule" and e.exact_objective is None for e in fast.epochs)


def test_triple_qa_never_moves_its_monotone_tables_while_every_bonus_exceeds_one():
    # Q̂ starts at H and a target r + γ V̂(s') + b_τ with V̂ = H is at least H exactly when b_τ >= H(1 − γ) − r =
    # 1 − r; with every bonus of the frame above 1 (κ = 5, χ = 1, ι = 1: b_τ = 5 sqrt(2/(1 + τ)) > 1 for τ < 49,
    # and a frame of 20 steps) no Q(s, a) ever falls below Q̂(s, a) = H: the tables keep H and the policy stays
    # uniform over every action, whatever the queue
    model = average_model()
    agent = TripleQA(model, horizon=200, kappa=5.0, discount_horizon=4.0, chi=1.0, iota=1.0, epsilon=0.0,
                     frame_exponent=math.log(20) / math.log(200))
    assert agent.frame == 20 and agent._bonus[-1] > 1.0
    # 199 steps: the last frame (19 steps) has not ended, so its tables were not reset
    run(agent, TabularCMDPEnv(model), 199, seed=1, progress=False)
    assert agent.steps_played == 199 and agent.q_hat == [4.0] * 4 and np.array_equal(agent.current_policy(), np.full((2, 2), 0.5))


def test_triple_qa_keeps_a_pair_of_utility_one_at_h_when_every_state_has_one():
    # utilities 1 − c: (s=0, a=1) and (s=1, a=0) have utility 1. Their pseudo-Q value at the tables' start, H(1 + Z/η),
    # is the largest any pair can have, so every state's Ŵ is H while they stay there; and a utility target
    # 1 + γ H + b = H + b exceeds Ĉ = H for every bonus b > 0: the joint monotone rule never moves them (one frame of
    # 2,000 steps, the bonus as small as 0.01 sqrt(2/(1 + τ))), and from the first time the other pair of a state has
    # moved below H the agent plays them only
    model = average_model()
    agent = TripleQA(model, horizon=2000, discount_horizon=4.0, chi=1.0, iota=1e-4, epsilon=0.0, frame_exponent=1.0)
    assert agent.frame == 2000
    run(agent, TabularCMDPEnv(model), 1999, seed=5, progress=False)
    assert agent.q_hat[1] == agent.q_hat[2] == 4.0 and agent.c_hat[0][1] == agent.c_hat[0][2] == 4.0
    assert agent.q_hat[0] < 4.0 and agent.q_hat[3] < 4.0
    assert np.array_equal(agent.current_policy(), [[0.0, 1.0], [1.0, 0.0]])


def test_triple_qa_steps_a_sparse_kernel_through_its_successor_lists():
    model = build_model("queue", buffer=20, storage="sparse")
    assert model.sparse
    fast, generic = (run(make_agent("triple-qa", model, horizon=2000), TabularCMDPEnv(model), 2000, seed=4, path=path,
                         progress=False) for path in ("fast", "generic"))
    assert np.array_equal(fast.checkpoints["costs"], generic.checkpoints["costs"])
    assert sum(e.length for e in fast.epochs) == 2000


def test_triple_qa_is_registered_and_refuses_bad_inputs():
    assert AGENTS["triple-qa"] is TripleQA
    model = average_model()
    with pytest.raises(AgentError, match="horizon"):
        TripleQA(model)
    with pytest.raises(AgentError, match="kappa"):
        TripleQA(model, horizon=100, kappa=0.5)
    with pytest.raises(AgentError, match="discount_horizon"):
        TripleQA(model, horizon=100, discount_horizon=0.5)
    with pytest.raises(AgentError, match="frame_exponent"):
        TripleQA(model, horizon=100, frame_exponent=2.0)
    with pytest.raises(AgentError, match="backend"):
        TripleQA(model, horizon=100, backend="highs")
    with pytest.raises(AgentError, match="non-linear objective"):
        TripleQA(CMDP(REWARDS, COSTS, SumOfLogs(weights=[1.0]), [LinearBound([1.0], 0.5)], KERNEL), horizon=100)
    with pytest.raises(AgentError, match="has none"):
        TripleQA(EpisodicCMDP(REWARDS, COSTS, Linear([1.0]), [], kernel=KERNEL, horizon=2), horizon=100)
