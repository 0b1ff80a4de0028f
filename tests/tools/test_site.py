"""tools.site's pages (no Sphinx needed): each notebook's page without the lecturer's notes,
its pictures with their alt text, its live widgets as a line saying they are live in
Jupyter, launch links only with a public address (in tools.links' form), and a link from
every exercise to its solution's own page. tests/browser/test_site.py builds the site."""

import re
import runpy
from urllib.parse import parse_qs, urlparse

import nbformat
import pytest

from tools import course, links
from tools.site import pages
from tools.slides import WIDGET_VIEW

ROOT = course.ROOT
NOTEBOOKS = course.notebooks()
README = (ROOT / "README.md").read_text(encoding="utf-8")
ADDRESS = pages.Address("someone/causal-attention", "v1", "https://hub.example.org")
URL = re.compile(r"https?://[^\s)\"'<>]+")


def stored(entry):
    return nbformat.read(ROOT / entry.path, as_version=4)


@pytest.fixture(scope="module")
def site_pages():
    """Every notebook's page without a public address: {name: (stored, page)}."""
    return {entry.name: (notebook := stored(entry), pages.site_notebook(notebook, entry, None))
            for entry in NOTEBOOKS}


def texts(notebook) -> str:
    return "\n".join(cell.source for cell in notebook.cells)


def test_the_lecturers_notes_are_left_out_and_every_other_cell_kept(site_pages):
    for name, (notebook, page) in site_pages.items():
        notes = [cell for cell in notebook.cells if pages.is_notes(cell)]
        assert notes, f"{name} has no notes cell to leave out"
        assert not any(pages.is_notes(cell) for cell in page.cells)
        assert "For the lecturer" not in texts(page), name
        kept = [cell.id for cell in notebook.cells
                if not pages.is_notes(cell) and not pages.live_widget_ids(cell)]
        shown = [cell.id for cell in page.cells]
        assert [id_ for id_ in shown if id_ in kept] == kept, name


def test_every_picture_keeps_its_alt_text(site_pages):
    for name, (_, page) in site_pages.items():
        pictures = 0
        for cell in page.cells:
            for output in cell.get("outputs", []):
                if "image/png" in output.get("data", {}):
                    pictures += 1
                    alt = output["metadata"]["image/png"]["alt"]
                    assert alt and cell.metadata["mystnb"]["image"]["alt"] == alt, name
        assert pictures, f"{name}'s page shows no picture"


@pytest.mark.parametrize("alts", [["a", "b"], ["a", None], [""]])
def test_a_cell_whose_pictures_lack_one_alt_text_is_refused(alts):
    cell = nbformat.v4.new_code_cell("draw()")
    cell.outputs = [nbformat.v4.new_output(
        "display_data", data={"image/png": "iVBORw0KGgo="},
        metadata={"image/png": {"alt": alt}} if alt is not None else {}) for alt in alts]
    with pytest.raises(ValueError, match="alt text"):
        pages.picture_options(cell)


def test_each_live_widget_becomes_a_line_saying_it_is_live_in_jupyter(site_pages):
    for name, (notebook, page) in site_pages.items():
        widgets = [cell for cell in notebook.cells if pages.live_widget_ids(cell)]
        notes = [cell for cell in page.cells
                 if cell.cell_type == "markdown" and pages.LIVE_TITLE in cell.source]
        assert len(notes) == len(widgets) >= 1, name
        assert not any(WIDGET_VIEW in output.get("data", {})
                       for cell in page.cells for output in cell.get("outputs", []))
        assert "widgets" not in page.metadata  # no widget manager to load
        explorer_notes = [cell for cell in notes if "explorer" in cell.source]
        assert len(explorer_notes) == 1, name
        above = page.cells[:page.cells.index(explorer_notes[0])]
        picture = [cell for cell in above if cell.cell_type == "code"][-1]
        assert ".picture()" in picture.source, f"{name}: the line is not below the picture"


def test_without_an_address_a_page_has_no_launch_link_and_says_how_to_run_it(site_pages):
    assert pages.readme_address(README) is None or "colab.research" in README
    for name, (_, page) in site_pages.items():
        launch = page.cells[1].source
        assert "make lab" in launch and "run-locally.md" in launch, name
        assert not URL.search(launch), name
        assert "course-launch" not in texts(page)


def test_with_an_address_the_launch_links_are_tools_links(site_pages):
    entry = NOTEBOOKS[1]
    page = pages.site_notebook(stored(entry), entry, ADDRESS)
    hrefs = re.findall(r'href="([^"]+)"', page.cells[1].source)
    assert [href.replace("&amp;", "&") for href in hrefs] == [
        links.binder_url(ADDRESS.repo, entry.path, "v1"),
        links.colab_url(ADDRESS.repo, entry.path, "v1"),
        links.nbgitpuller_url(ADDRESS.hub, ADDRESS.repo, entry.path, "v1")]
    # The documented forms (tools/links.py):
    assert hrefs[0] == ("https://mybinder.org/v2/gh/someone/causal-attention/v1"
                        f"?urlpath=lab/tree/{entry.path}")
    assert hrefs[1] == ("https://colab.research.google.com/github/someone/causal-attention"
                        f"/blob/v1/{entry.path}")
    hub = urlparse(hrefs[2].replace("&amp;", "&"))
    assert (hub.netloc, hub.path) == ("hub.example.org", "/hub/user-redirect/git-pull")
    assert parse_qs(hub.query) == {
        "repo": ["https://github.com/someone/causal-attention"], "branch": ["v1"],
        "urlpath": [f"lab/tree/causal-attention/{entry.path}"]}


def test_the_address_is_the_one_the_readme_launch_links_use():
    """tools.links --write puts the address in the README; the site reads it from there."""
    table = links.readme_table(links.links("someone/causal-attention", "v2"))
    published = links.rewrite_readme(README, table)
    assert pages.readme_address(published) == pages.Address("someone/causal-attention", "v2")
    unpublished = links.rewrite_readme(README, links.NO_ADDRESS_NOTE)
    assert pages.readme_address(unpublished) is None
    with pytest.raises(ValueError, match="launch-link block"):
        pages.readme_address(links.rewrite_readme(README, "something else"))
    with pytest.raises(ValueError, match="OWNER/NAME"):
        pages.Address("not a repository")


def test_every_exercise_links_to_its_solutions_own_page(site_pages):
    for entry in NOTEBOOKS:
        _, page = site_pages[entry.name]
        for exercise in entry.exercises:
            link = f"]({pages.solution_page_name(exercise)}.md): try the check and its hints"
            [cell] = [cell for cell in page.cells if exercise.load_line in cell.source]
            assert link in cell.source, exercise
            label = f"({pages.exercise_label(exercise)})=\n### Exercise"
            assert sum(label in cell.source for cell in page.cells) == 1, exercise
            solution = pages.solution_page(exercise)
            code = (ROOT / exercise.solution_path).read_text(encoding="utf-8").rstrip()
            assert f"```python\n{code}\n```" in solution
            assert f"<{pages.exercise_label(exercise)}>`" in solution
            assert "Try the check and its hints first" in solution
        assert len({pages.exercise_label(exercise) for exercise in entry.exercises}) \
            == len(entry.exercises)


def test_a_notebook_page_shows_no_solution(site_pages):
    for entry in NOTEBOOKS:
        _, page = site_pages[entry.name]
        for exercise in entry.exercises:
            code = (ROOT / exercise.solution_path).read_text(encoding="utf-8").strip()
            body = code.split("\n\n\n")[-1]  # the definition, after its imports
            assert body not in texts(page), exercise


def test_the_pages_from_the_readme_keep_its_text_and_link_only_to_pages():
    written = {"index.md": pages.home_page, "run-locally.md": pages.run_locally_page,
               "lecturers.md": pages.lecturers_page, "hub-admins.md": pages.hub_admins_page}
    notebooks = [(entry, pages.notebook_title(stored(entry))) for entry in NOTEBOOKS]
    made = {name: page(README, notebooks, None) for name, page in written.items()}
    assert pages.sections(README)[""].strip() in made["index.md"]
    for entry, (_, title) in notebooks:
        assert f"[{title}]({entry.name}.ipynb)" in made["index.md"]
    assert re.findall(r"\*\(\d+ min \+ \d+ optional\)\*", made["index.md"]) == \
        re.findall(r"\*\(\d+ min \+ \d+ optional\)\*", README)
    assert "make slides" in made["lecturers.md"] and "RISE" in made["lecturers.md"]
    assert "repo2docker" in made["hub-admins.md"] and "MB" in made["hub-admins.md"]
    assert links.README_START not in made["hub-admins.md"]
    assert "make lab" in made["run-locally.md"]
    pages_made = set(made) | {f"{entry.name}.ipynb" for entry in NOTEBOOKS}
    for name, text in made.items():
        for target in re.findall(r"\]\(([^)#]+)", text):
            assert target in pages_made, f"{name} links to {target}, not a page"
        assert "<!--" not in text, name


def test_links_to_course_files_go_to_github_or_become_text():
    text = "See [`LICENSE`](LICENSE), [1](notebooks/a.ipynb), [web](https://x.org), [top](#a)."
    found = pages.site_links(text, {"notebooks/a.ipynb": "a.ipynb"}, None)
    assert found == "See `LICENSE`, [1](a.ipynb), [web](https://x.org), [top](#a)."
    found = pages.site_links(text, {}, ADDRESS)
    assert "[`LICENSE`](https://github.com/someone/causal-attention/blob/v1/LICENSE)" in found
    assert "(https://github.com/someone/causal-attention/blob/v1/notebooks/a.ipynb)" in found


def test_sources_are_rewritten_only_when_they_change(tmp_path):
    """A second build rewrites nothing, so that Sphinx redoes nothing (the warm build)."""
    names = [NOTEBOOKS[0].name]
    written = pages.write_sources(tmp_path, None, names)
    expected = {"index.md", "run-locally.md", "lecturers.md", "hub-admins.md",
                f"{names[0]}.ipynb"} | {f"{pages.solution_page_name(exercise)}.md"
                                         for exercise in NOTEBOOKS[0].exercises}
    assert set(written) == expected
    times = {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*") if path.is_file()}
    (tmp_path / "stale.md").write_text("a page no longer built")
    pages.write_sources(tmp_path, None, names)
    assert {path: path.stat().st_mtime_ns
            for path in tmp_path.rglob("*") if path.is_file()} == times


def test_the_configuration_loads_nothing_from_a_cdn_and_runs_nothing():
    conf = runpy.run_path(str(ROOT / "tools" / "site" / "conf.py"))
    assert conf["nb_execution_mode"] == "off"
    assert conf["nb_ipywidgets_js"] == {}
    assert not URL.match(conf["mathjax_path"])
    assert conf["html_show_search_summary"] is False
