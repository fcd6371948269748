"""The documentation matches the code: every config key with its default, every chat command,
every `bot` subcommand and option, links that resolve, and a site that builds strictly."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from enum import Enum
from pathlib import Path

import pytest
import yaml
from markdown.extensions.toc import slugify
from pydantic import BaseModel

from bot.cli import _parser
from bot.config import Config
from bot.core.commands import COMMANDS
from tests.support.paths import ROOT

DOCS = ROOT / "docs"
MKDOCS = Path(sys.executable).with_name("mkdocs")
_ROW = re.compile(r"^\|\s*`([A-Za-z0-9_.]+)`\s*\|\s*([^|]*?)\s*\|", re.MULTILINE)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _leaf_keys(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str]]:
    """Every dotted key a config file may set, with its default as the docs spell it."""
    for name, field in model.model_fields.items():
        if field.exclude:  # secrets: filled from the environment, never from the file
            continue
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from _leaf_keys(annotation, f"{prefix}{name}.")
        elif field.is_required():
            yield f"{prefix}{name}", "required"
        else:
            yield f"{prefix}{name}", _spelled(field.default)


def _spelled(value: object) -> str:
    """A default as YAML writes it, on one line: null, true, [], 60 (not 60.0), hybrid,
    [{title: a, message: b}]."""
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple):
        value = [item.model_dump() if isinstance(item, BaseModel) else item for item in value]
    dumped = yaml.safe_dump(
        value, default_flow_style=True, sort_keys=False, allow_unicode=True, width=10**6
    )
    return str(dumped).removesuffix("\n...\n").strip()


def _documented_defaults(page: Path) -> dict[str, str]:
    """The reference's rows: `key` | default | meaning."""
    text = page.read_text(encoding="utf-8")
    return {key: cell.strip("`") for key, cell in _ROW.findall(text)}


def test_the_configuration_reference_lists_every_key_with_its_default() -> None:
    documented = _documented_defaults(DOCS / "configuration.md")
    keys = dict(_leaf_keys(Config))
    problems = [
        f"{key}: no row (default {default})"
        for key, default in keys.items()
        if key not in documented
    ]
    problems += [
        f"{key}: the code's default is {default}, the docs say {documented[key]}"
        for key, default in keys.items()
        if key in documented and documented[key] != default
    ]
    problems += [
        f"{key}: documented, but the config has no such key"
        for key in documented
        if "." in key and key.islower() and key not in keys
    ]
    assert not problems, "docs/configuration.md:\n" + "\n".join(problems)


def test_the_chat_commands_are_all_documented_and_in_the_readme_summary() -> None:
    for page in (DOCS / "commands.md", ROOT / "README.md"):
        text = page.read_text(encoding="utf-8")
        missing = [spec.usage for spec in COMMANDS if f"| `{spec.usage}` |" not in text]
        assert not missing, f"{page.relative_to(ROOT)}: no table row for {', '.join(missing)}"


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = _parser()
    (action,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _sections(text: str) -> dict[str, str]:
    """``### `bot NAME` `` headings and the text under each."""
    parts = re.split(r"^### `bot ([a-z-]+)`\s*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_bot_subcommand_and_option_is_documented() -> None:
    sections = _sections((DOCS / "commands.md").read_text(encoding="utf-8"))
    problems = []
    for name, sub in _subcommands().items():
        if name not in sections:
            problems.append(f"no '### `bot {name}`' section")
            continue
        for action in sub._actions:
            flags = [o for o in action.option_strings if o not in ("-h", "--help", "--config")]
            words = flags or ([] if action.option_strings else [action.metavar or action.dest])
            for word in words:
                if not re.search(
                    rf"(?<![\w-]){re.escape(str(word))}(?![\w-])", sections[name], re.I
                ):
                    problems.append(f"bot {name}: {word} is not described")
    assert not problems, "docs/commands.md:\n" + "\n".join(problems)


def _anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#+\s+(.+?)\s*$", page.read_text(encoding="utf-8"), re.MULTILINE)
    return {slugify(h.replace("`", ""), "-") for h in headings}


def test_the_readme_links_into_docs_resolve() -> None:
    links = [
        link
        for link in _LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
        if link.startswith("docs/")
    ]
    assert links, "the README links to no page of docs/"
    broken = []
    for link in links:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        if not target.is_file():
            broken.append(f"{link}: no such file")
        elif anchor and anchor not in _anchors(target):
            broken.append(f"{link}: {path} has no heading #{anchor}")
    assert not broken, "README.md links that lead nowhere:\n" + "\n".join(broken)


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=120,
    )


@pytest.mark.skipif(not MKDOCS.exists(), reason="mkdocs is a dev dependency")
def test_the_site_builds_strictly_and_a_broken_link_fails_it(tmp_path: Path) -> None:
    built = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "configuration" / "index.html").is_file()

    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    with (tmp_path / "docs" / "cost.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [the old page](pricing.md).\n")
    broken = _build(tmp_path / "mkdocs.yml", tmp_path / "broken-site")
    assert broken.returncode != 0
    assert "pricing.md" in broken.stderr
