"""The ``pyomo`` backend: a program as a Pyomo model (:mod:`.expressions`), the backend and its options
(:mod:`.backend`), the solvers behind it (:mod:`.solvers`), the compiled program (:mod:`.compiled`) and the bridge
that feeds the model to Ipopt through cyipopt without the AMPL Solver Library (:mod:`.ipopt_bridge`).
"""
