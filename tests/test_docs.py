"""The documentation: the site builds with --strict (mkdocs.yml: a broken link or anchor, or a page left out of
the navigation, fails), and the README stays a front page whose links all lead somewhere."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
LINK = re.compile(r"(?<!!)\[[^\]]+\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """How GitHub names a heading's anchor: lower case, punctuation dropped but - and _, spaces as -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)  # a `# comment` in a code block is no heading
    return {github_anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


@pytest.mark.slow  # mkdocs renders every page and the API reference: ~10 s
def test_the_site_builds_strictly_with_the_contract_rendered_from_its_docstrings(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                            cwd=REPO, capture_output=True, text=True, timeout=600,
                            env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    contract = (tmp_path / "site" / "api" / "recipe" / "index.html").read_text()
    assert "recipe_from_module" in contract and "HUB_ID" in contract
    assert "RewardBundle" in (tmp_path / "site" / "api" / "rewards" / "index.html").read_text()


def test_every_link_on_the_front_page_leads_to_a_file_and_heading_that_exist():
    broken = []
    for target in LINK.findall(README.read_text()):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        page = REPO / path if path else README
        if not page.exists() or (anchor and anchor not in anchors(page)):
            broken.append(target)
    assert broken == []


def test_the_front_page_is_short():
    assert len(README.read_text().splitlines()) <= 250


def test_the_anchor_check_sees_a_missing_heading(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Title\n\n## Will it fit? `kit plan`\n\n```bash\n# not a heading\n```\n")
    assert anchors(page) == {"title", "will-it-fit-kit-plan"}
