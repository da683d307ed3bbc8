"""A study output folder holds one study: a second study (another name, or the same study under another profile)
is refused there, rather than silently replacing the first's ``study.json``, summary, figures and report.

The same study run again (resumed, or with its file edited: more seeds, another grid) is the same study: its runs
are kept and its outputs rewritten, as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...errors import CurloptError

__all__ = ["check_one_study", "StudyFolderError"]


class StudyFolderError(CurloptError):
    """The output folder already holds another study."""


def _identity(name: Any, profile: Any) -> tuple[str, str]:
    return str(name), str((profile or {}).get("name", "") if isinstance(profile, dict) else "")


def _said(name: str, profile: str) -> str:
    return f"study {name!r}" + (f" (profile {profile})" if profile else "")


def check_one_study(out: str | Path, name: str, profile: dict[str, Any] | None) -> None:
    """Refuse to write study ``name`` (under ``profile``) into ``out`` when its ``study.json`` records another.

    A folder without ``study.json``, or with one that cannot be read as a study record, is not refused (the study
    record is then written for the first time, or over a file that names no study).

    Raises
    ------
    StudyFolderError
        One line naming the study the folder holds and what to do instead.
    """
    path = Path(out) / "study.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(record, dict) or record.get("format") != "curlopt-study" or not isinstance(
            record.get("study"), dict):
        return
    held = _identity(record["study"].get("name", ""), record.get("profile"))
    asked = _identity(name, profile)
    if held != asked:
        raise StudyFolderError(
            f"{Path(out)} holds {_said(*held)} (its study.json); {_said(*asked)} would replace its study.json,"
            " summary, figures and report: give it another output folder (--out), or remove that folder first.")
