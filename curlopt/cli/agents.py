"""``curlopt agents``: the registered agents and their options (name, default, what it does).

The options are each agent class's declaration (``OPTIONS``, :mod:`curlopt.agents.options`), with the defaults of
its constructor; ``--markdown`` prints them as the tables of docs/guide/agents.md.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import typer

from .app import app

__all__ = ["option_rows", "agent_summary", "options_markdown"]

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")  # :class:`~curlopt.agents.UcCurl` -> curlopt.agents.UcCurl

#: what the row of the keywords an agent passes on to its backend says
PASSED_ON = "Passed to the backend when backend is a name (the backend's options: curlopt backends)."


def _plain(text: str) -> str:
    """Docstring text as plain words: Sphinx roles and literals unwrapped, spaces collapsed."""
    text = _ROLE.sub(lambda m: m.group(1).rsplit(".", 1)[-1] if m.group(0).startswith(":class:") else m.group(1), text)
    text = text.replace("``", "")
    text = " ".join(text.split())
    return text.strip()


def _first_sentence(text: str) -> str:
    text = _plain(text)
    match = re.search(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=\.)\s+", text)
    return text[: match.start()] if match else text


def option_rows(name: str) -> list[dict[str, Any]]:
    """The options of agent ``name`` as its declaration gives them: ``name``, ``default``, ``required``, ``type``
    (the values it takes, in words) and ``description`` of each.

    An agent that passes the keywords it does not take on to its backend lists them last, as ``**backend_options``.
    """
    from ..agents import agent_class
    from ..agents.options import REQUIRED

    cls = agent_class(name)
    rows = [{"name": option.name, "default": None if option.default is REQUIRED else option.default,
             "required": option.default is REQUIRED, "type": option.expects, "description": option.doc}
            for option in cls.declared_options().values()]
    if cls.PASSES_ON:
        rows.append({"name": "**backend_options", "default": None, "required": False, "type": "",
                     "description": PASSED_ON})
    return rows


def agent_summary(name: str) -> str:
    """The first sentence of an agent's docstring, in plain words."""
    from ..agents import AGENTS

    doc = inspect.cleandoc(AGENTS[name].__doc__ or "")
    return _first_sentence(doc.split("\n\n")[0]) if doc else ""


def _default_text(option: dict[str, Any]) -> str:
    if option["name"].startswith("**"):
        return ""
    if option["required"]:
        return "required"
    value = option["default"]
    if isinstance(value, float):
        return f"{value:.6g}"
    return value if isinstance(value, str) else repr(value)


def _cell(text: str) -> str:
    """``text`` in a Markdown table cell (a ``|`` would end the cell)."""
    return text.replace("|", "\\|")


def options_markdown() -> str:
    """The options of every registered agent as Markdown tables (the reference in docs/guide/agents.md)."""
    from ..agents import AGENTS

    parts = []
    for name in AGENTS:
        lines = [f"**{name}**", "", "| option | default | values | what it does |", "|---|---|---|---|"]
        for row in option_rows(name):
            default = _default_text(row)
            lines.append(f"| `{row['name']}` | {f'`{default}`' if default else ''} | {_cell(row['type'])} |"
                         f" {_cell(row['description'])} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


@app.command("agents")
def agents_command(
    as_json: bool = typer.Option(False, "--json", help="Print the agents and options as JSON."),
    markdown: bool = typer.Option(False, "--markdown", help="Print the options as the guide's Markdown tables."),
) -> None:
    """List the registered agents and their options (name, default, what it does); give them to run with --option."""
    from ..agents import AGENTS

    if markdown:
        typer.echo(options_markdown(), nl=False)
        return
    if as_json:
        data = {name: {"class": f"{cls.__module__}.{cls.__qualname__}", "description": agent_summary(name),
                       "needs_horizon": bool(getattr(cls, "needs_horizon", False)),
                       "options": [{**o, "default": _jsonable(o["default"])} for o in option_rows(name)]}
                for name, cls in AGENTS.items()}
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    for index, (name, cls) in enumerate(AGENTS.items()):
        if index:
            typer.echo("")
        typer.echo(f"{name}: {agent_summary(name)}")
        if getattr(cls, "needs_horizon", False):
            typer.echo("  (its horizon is the run's --steps)")
        options = option_rows(name)
        width = max((len(o["name"]) for o in options), default=0)
        defaults = max((len(_default_text(o)) for o in options), default=0)
        for option in options:
            typer.echo(f"  {option['name']:<{width}}  {_default_text(option):<{defaults}}  {option['description']}"
                       .rstrip())
