"""The ``mdp-columns`` backend (:mod:`.backend`): occupancy programs by column generation over deterministic
policies, with relative value iteration as the pricing oracle.

Modules: :mod:`.chains` (the kernel as an (S·A, S) matrix; recurrent classes and stationary laws of deterministic
policies), :mod:`.values` (relative value iteration with gain bounds), :mod:`.problem` (what a program asks, in
per-pair signals), :mod:`.pool` (the columns, kept as policies), :mod:`.masters` and :mod:`.conic` (the master
problem on HiGHS or CVXPY), :mod:`.search` (the column-generation loop and its certificate).

Importing this package imports no solver.
"""
