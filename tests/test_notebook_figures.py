"""Reader-facing notebook conventions the book build cannot see: every figure is captioned,
named for cross-references and described by alt text; nbval markers are cell tags."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def figure_cells(path: Path) -> list[tuple[int, dict]]:
    """Code cells whose outputs hold an image or a kernel-free slider."""
    cells = json.loads(path.read_text())["cells"]
    return [(i, cell) for i, cell in enumerate(cells) if cell["cell_type"] == "code"
            and any("image/png" in out.get("data", {})
                    or "attn-slider" in "".join(out.get("data", {}).get("text/html", ""))
                    for out in cell.get("outputs", []))]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_figure_has_caption_name_and_alt(path: Path) -> None:
    problems, names = [], []
    for i, cell in figure_cells(path):
        meta = cell["metadata"].get("mystnb", {})
        figure, image = meta.get("figure", {}), meta.get("image", {})
        images = sum("image/png" in out.get("data", {}) for out in cell["outputs"])
        if images > 1:
            problems.append(f"cell {i}: {images} figures in one cell (one caption each: split it)")
        if len(figure.get("caption", "").split()) < 4:
            problems.append(f"cell {i}: no caption (mystnb.figure.caption)")
        if not figure.get("name", "").startswith("fig-"):
            problems.append(f"cell {i}: no name fig-... (mystnb.figure.name)")
        names.append(figure.get("name"))
        if images and len(image.get("alt", "").split()) < 4:
            problems.append(f"cell {i}: no alt text (mystnb.image.alt)")
    duplicated = {name for name in names if name and names.count(name) > 1}
    assert not duplicated, f"{path.name}: figure names used twice: {duplicated}"
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_nbval_markers_are_tags(path: Path) -> None:
    cells = json.loads(path.read_text())["cells"]
    marked = [i for i, cell in enumerate(cells) if cell["cell_type"] == "code"
              and "NBVAL_" in "".join(cell["source"])]
    assert not marked, (f"{path.name}: cells {marked} carry # NBVAL_ comments readers see; "
                        "use the cell tags nbval-ignore-output / nbval-skip")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_figure_is_referenced_and_every_display_equation_numbered(path: Path) -> None:
    """Readers find a figure by its number ({numref}) and cite an equation by its number: each
    named figure is referenced in the chapter's text, each display equation has a label."""
    cells = json.loads(path.read_text())["cells"]
    prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    names = [c["metadata"].get("mystnb", {}).get("figure", {}).get("name")
             for _, c in figure_cells(path)]
    unreferenced = [n for n in names if n and f"{{numref}}`{n}`" not in prose]
    assert not unreferenced, f"{path.name}: figures never referenced with {{numref}}: {unreferenced}"
    closings = re.findall(r"\$\$(?!\$)([^\n]*)", prose)[1::2]     # text after each closing $$
    unlabelled = sum(not re.match(r" \(eq-[\w-]+\)", rest) for rest in closings)
    assert unlabelled == 0, f"{path.name}: {unlabelled} display equations without a (eq-...) label"


#: What a chapter's code must not type, because a named piece of attnlib does it (CONTRIBUTING.md):
#: figures through ``plotting.figure``, colours by name, stored runs through ``experiments.replay``
#: and ``experiments.config``, regularizers by their library name.
HOUSE_RULES = {
    r"plt\.subplots\(|plt\.figure\(": "make figures with attnbook.plotting.figure",
    r"[\"']#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?[\"']": "name colours (plotting.OKABE_ITO, SERIES)",
    r"assert_prefix_matches|experiments\.run\(": "replay stored runs with experiments.replay",
    r"json\.loads": "read a stored run's settings with experiments.config",
    r"[\"']weight decay[\"']": "call a regularizer by its library name, 'weight_decay'",
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapters_use_the_named_pieces(path: Path) -> None:
    code = [(i, "".join(cell["source"])) for i, cell in enumerate(json.loads(path.read_text())["cells"])
            if cell["cell_type"] == "code"]
    broken = [f"cell {i}: {rule} ({re.search(pattern, text).group(0)!r})"
              for pattern, rule in HOUSE_RULES.items() for i, text in code
              if re.search(pattern, text)]
    assert not broken, "\n".join(broken)


def test_the_house_rules_catch_what_they_name() -> None:
    typed = ['fig, ax = plt.subplots(1, 2)', 'color="#D55E00"', "experiments.run('x', full=False)",
             "json.loads(str(h['config']))", 'regs["weight decay"]']
    for pattern, text in zip(HOUSE_RULES, typed):
        assert re.search(pattern, text), pattern
    assert not any(re.search(p, 'figure(1, 2); OKABE_ITO["blue"]; regs["weight_decay"]')
                   for p in HOUSE_RULES)
