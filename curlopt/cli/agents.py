"""``curlopt agents``: the registered agents and their options (name, default, what it does).

The options are read from each agent class: the keyword arguments of its
constructor (their defaults) and the ``Parameters`` section of its numpy-style
docstring (the first sentence of each description). An entry that says "As for
:class:`X`" takes its description from agent class ``X``.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import typer

from .app import app

__all__ = ["agent_options", "agent_summary", "docstring_parameters"]

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")  # :class:`~curlopt.agents.UcCurl` -> curlopt.agents.UcCurl


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


def docstring_parameters(doc: str | None) -> dict[str, tuple[str, str]]:
    """``{name: (type text, description)}`` of a numpy docstring's Parameters section.

    An entry naming several parameters (``model, backend, trigger``) gives each the same
    description; ``**kwargs`` entries keep their stars. The section ends at the next
    underlined heading or at the first unindented line that is not an entry.
    """
    lines = inspect.cleandoc(doc or "").splitlines() + [""]

    def heading(i: int) -> bool:
        return bool(lines[i].strip()) and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}

    start = next((i for i in range(len(lines)) if heading(i) and lines[i].strip() == "Parameters"), None)
    if start is None:
        return {}
    entries: dict[str, tuple[str, str]] = {}
    names: list[str] = []
    kind = ""
    text: list[str] = []
    for i in range(start + 2, len(lines)):
        line = lines[i]
        if heading(i):
            break
        if line and not line.startswith(" "):
            if names and not text and not line.startswith("*") and " : " not in line and "," not in line \
                    and not line.strip().isidentifier():
                break  # prose after the section
            entries.update({name: (kind, " ".join(text)) for name in names})
            head, _, kind = line.partition(" : ")
            names, kind, text = [n.strip() for n in head.split(",") if n.strip()], kind.strip(), []
            if not all(n.lstrip("*").isidentifier() for n in names):
                names = []
                break
        elif line.strip() and names:
            text.append(line.strip())
        elif not line.strip() and names and text and i + 1 < len(lines) and lines[i + 1] \
                and not lines[i + 1].startswith(" "):
            entries.update({name: (kind, " ".join(text)) for name in names})
            names = []
    entries.update({name: (kind, " ".join(text)) for name in names})
    return entries


def _references(cls: type, agents: dict[str, type]) -> list[type]:
    """The agent classes named by "As for :class:`X`" in ``cls``'s docstring."""
    names = [name.rsplit(".", 1)[-1] for name in re.findall(r"As for :class:`~?([\w.]+)`", cls.__doc__ or "")]
    return [c for name in names for c in agents.values() if c.__name__ == name]


def _describe(name: str, cls: type, agents: dict[str, type]) -> tuple[str, str]:
    """Type text and one-line description of option ``name`` of ``cls``.

    An entry "As for :class:`X`; ``name`` does this" gives its own clause about ``name``, else X's
    description; an option without an entry takes the description of the classes ``cls`` refers to.
    """
    entries = docstring_parameters(cls.__doc__)
    if name in entries:
        kind, text = entries[name]
        reference = re.match(r"\s*As for :class:`~?([\w.]+)`[;,.]?\s*(.*)", text)
        if reference is None:
            return kind, _first_sentence(text)
        own = [clause for clause in re.split(r"[;.]\s+", reference.group(2)) if f"``{name}``" in clause]
        if own:  # "``seed`` drives the posterior samples" -> "Drives the posterior samples."
            clause = _first_sentence(own[0].replace(f"``{name}``", "", 1).strip()).rstrip(".")
            return kind, clause[:1].upper() + clause[1:] + "."
    for other in _references(cls, agents):
        if other is not cls:
            kind, text = _describe(name, other, agents)
            if text:
                return kind, text
    return "", ""


def _default(parameter: inspect.Parameter) -> Any:
    return None if parameter.default is inspect.Parameter.empty else parameter.default


def agent_options(name: str) -> list[dict[str, Any]]:
    """The options of agent ``name``: ``name``, ``default``, ``required``, ``type`` and ``description`` of each.

    Keyword arguments the agent passes on (``**backend_options``) are listed last, under their starred name.
    """
    from ..agents import AGENTS

    cls = AGENTS[name]
    options = []
    for parameter in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if parameter.name == "model" or parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        starred = parameter.kind is inspect.Parameter.VAR_KEYWORD
        key = f"**{parameter.name}" if starred else parameter.name
        kind, description = _describe(key, cls, AGENTS)
        options.append({"name": key, "default": None if starred else _default(parameter),
                        "required": not starred and parameter.default is inspect.Parameter.empty,
                        "type": _plain(kind), "description": description})
    return options


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


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


@app.command("agents")
def agents_command(as_json: bool = typer.Option(False, "--json", help="Print the agents and options as JSON.")) -> None:
    """List the registered agents and their options (name, default, what it does); give them to run with --option."""
    from ..agents import AGENTS

    if as_json:
        data = {name: {"class": f"{cls.__module__}.{cls.__qualname__}", "description": agent_summary(name),
                       "needs_horizon": bool(getattr(cls, "needs_horizon", False)),
                       "options": [{**o, "default": _jsonable(o["default"])} for o in agent_options(name)]}
                for name, cls in AGENTS.items()}
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    for index, (name, cls) in enumerate(AGENTS.items()):
        if index:
            typer.echo("")
        typer.echo(f"{name}: {agent_summary(name)}")
        if getattr(cls, "needs_horizon", False):
            typer.echo("  (its horizon is the run's --steps)")
        options = agent_options(name)
        width = max((len(o["name"]) for o in options), default=0)
        defaults = max((len(_default_text(o)) for o in options), default=0)
        for option in options:
            typer.echo(f"  {option['name']:<{width}}  {_default_text(option):<{defaults}}  {option['description']}"
                       .rstrip())
