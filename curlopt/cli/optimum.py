"""``curlopt optimum ENV``: the known-model optimum f(λ*) and its policy."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
import typer

from .app import app
from .common import load_model

if TYPE_CHECKING:
    from ..models.cmdp import CMDP


@app.command("optimum")
def optimum_command(
    env: str = typer.Argument(..., help="Built-in model name, e.g. queue or scheduler, or a model file (.json)."),
    backend: str = typer.Option("auto", "--backend", "-b", help="Backend registry name, or auto (highs for LP-representable utilities, else cvxpy/pyomo)."),
    param: list[str] = typer.Option(None, "--param", "-p", help="Model parameter key=value (repeatable)."),
    epsilon: float = typer.Option(0.0, "--epsilon", help="Tightness ε of the constraint rows, 0 <= ε <= 1e6."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    horizon: int = typer.Option(None, "--horizon", help="Play the model in episodes of H steps (values are"
                                " per-episode totals; a per-step budget b becomes H·b)."),
    discount: float = typer.Option(None, "--discount", help="The discounted criterion with factor 0 < γ < 1."),
) -> None:
    """Solve the known-model program of the model's criterion on its own kernel (Q = P).

    The long-run average criterion by default; ``--horizon H`` the episodic one, ``--discount γ`` the discounted one.
    Exits 1 when the solve does not end optimal, with ``--json`` as without it.
    """
    from ..backends.base import solver_output_to_stderr
    from ..optimum import solve_optimum

    model = _model_of_criterion(env, param, horizon, discount)
    if getattr(model, "criterion", "average") == "average":
        _warn_if_not_ergodic(model)
    with solver_output_to_stderr():  # whatever a solver prints goes to stderr: stdout is the result alone
        result = solve_optimum(model, backend, epsilon=epsilon)
    if as_json:
        out = {"env": env, "model": repr(model), **result.to_dict()}
        out.pop("occupancy", None)
        typer.echo(json.dumps(out, indent=2))
        if not result.ok:
            raise typer.Exit(1)
        return
    typer.echo(f"model        {model!r}")
    typer.echo(f"backend      {result.backend} ({result.solver}), {result.solve_time:.3f} s, iterations {result.iterations}")
    typer.echo(f"status       {result.status.value} ({result.program.value} program)")
    if result.message:
        typer.echo(f"note         {result.message}")
    if not result.ok:
        raise typer.Exit(1)
    # a status with a solution (ok) comes with its occupancies, values and policy
    assert result.rewards is not None and result.costs is not None
    assert result.constraint_values is not None and result.policy is not None
    typer.echo(f"f(λ*)        {result.objective:.10g}")
    typer.echo(f"λ*           {np.array2string(result.rewards, precision=8)}")
    typer.echo(f"ζ*           {np.array2string(result.costs, precision=8)}")
    for m, value in enumerate(result.constraint_values):
        typer.echo(f"g_{m + 1}(ζ*)     {value:.3e}  ({model.constraints[m]!r})")
    policy = result.policy
    if policy.ndim == 3:  # episodic: one policy per step
        typer.echo(f"values       per-episode totals over H = {policy.shape[0]} steps")
        policy = policy[0]
        typer.echo("policy at step 1 of the episode (--json for every step)")
    typer.echo("policy (rows: states, columns: actions; entries below 1e-6 shown as .)")
    labels = model.labels.get("states", [str(s) for s in range(model.n_states)])
    for s, row in enumerate(policy):
        cells = " ".join(f"{p:5.3f}" if p >= 1e-6 else "    ." for p in row)
        typer.echo(f"  {labels[s]:>8s}  {cells}")


def _model_of_criterion(env: str, param: list[str] | None, horizon: int | None, discount: float | None) -> CMDP:
    """The model of ``env``, played in episodes of ``horizon`` steps or discounted by ``discount`` when given.

    A built-in model gets them as parameters (so a builder that declares a safe policy declares it); a model file is
    put under the criterion by :mod:`curlopt.models.criteria`."""
    from ..errors import CurloptError

    if horizon is not None and discount is not None:
        raise CurloptError("give --horizon (episodic) or --discount (discounted), not both.")
    if horizon is None and discount is None:
        return load_model(env, param)
    criterion = {"horizon": horizon} if horizon is not None else {"discount": discount}
    if env.endswith(".json"):
        from ..models.criteria import discounted, episodic

        model = load_model(env, param)
        return episodic(model, horizon) if horizon is not None else discounted(model, discount)
    from ..models import build_model
    from .common import parse_params

    params = parse_params(param)
    clash = sorted(set(params) & set(criterion))
    if clash:
        raise CurloptError(f"give {clash[0]} once: as --{clash[0]} or as --param {clash[0]}=..., not both.")
    return build_model(env, **params, **criterion)


def _warn_if_not_ergodic(model: CMDP) -> None:
    """Warn (stderr) when the diagnostics find the model is not ergodic."""
    from ..models.chains import ergodicity_warning
    from .logs import warn

    message = ergodicity_warning(model)
    if message:
        warn(message)  # "warning: ..." on stderr, like every other warning; --quiet hides it
