"""tools.site's pages (no Sphinx needed): each notebook's page without the lecturer's notes,
its pictures with their alt text, its live widgets as a line saying they are live in
Jupyter, how to run it locally without a public address, the theme's launch and repository
buttons with one (pointed at each notebook's file), and a link from every exercise to its
solution's own page. tests/browser/test_site.py builds the site."""

import re
import runpy
from pathlib import Path

import nbformat
import pytest

from tools import course, links
from tools.site import build, pages
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


def test_every_picture_has_a_short_alt_text_and_its_whole_description(site_pages):
    """The notebooks store a description of each picture (up to 500 characters): its page
    gives the picture the leading sentences, at most ALT_LIMIT characters on one line, as
    alt text, and the whole description as its caption when the alt text leaves some out."""
    for name, (_, page) in site_pages.items():
        pictures = 0
        for cell in page.cells:
            for output in cell.get("outputs", []):
                if "image/png" in output.get("data", {}):
                    pictures += 1
                    description = output["metadata"]["image/png"]["alt"]
                    options = cell.metadata["mystnb"]
                    alt = options["image"]["alt"]
                    assert 0 < len(alt) <= pages.ALT_LIMIT and "\n" not in alt, (name, alt)
                    assert description.startswith(alt.removesuffix("…")), (name, alt)
                    if alt == description:
                        assert "figure" not in options, name
                    else:
                        caption = options["figure"]["caption"]
                        assert caption.replace("\\", "") == description.replace("\\", "")
        assert pictures, f"{name}'s page shows no picture"


@pytest.mark.parametrize("description, alt", [
    ("Short. Also short. A" + "b" * 130, "Short. Also short."),
    ("2 panels: a heatmap titled 'one, two', query against key; a heatmap titled 'three, "
     "four', query against key; a colour bar for attention weight.",
     "2 panels: a heatmap titled 'one, two', query against key…"),
    ("word " * 40, ("word " * 25).strip() + "…"),
    ("All of it fits.", "All of it fits."),
])
def test_an_alt_text_is_the_descriptions_leading_sentences_or_clauses(description, alt):
    assert pages.short_alt(description, limit=60 if "panels" in description else 125) == alt


def test_a_caption_is_plain_text_not_markdown():
    cell = nbformat.v4.new_code_cell("draw()")
    text = "A $x$ *star* and `code`. " + "More words. " * 12
    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="},
                                           metadata={"image/png": {"alt": text}})]
    options = pages.picture_options(cell)
    assert options["image"]["alt"] == "A $x$ *star* and `code`." + " More words." * 8
    assert options["figure"]["caption"].startswith(r"A \$x\$ \*star\* and \`code\`\. ")
    cell.outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": "1"},
                                               execution_count=1))
    with pytest.raises(ValueError, match="caption"):
        pages.picture_options(cell)


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


def test_without_an_address_a_page_says_how_to_run_it_and_the_theme_has_no_buttons(
        site_pages):
    assert pages.readme_address(README) is None or "colab.research" in README
    for name, (_, page) in site_pages.items():
        local = page.cells[1].source
        assert "make lab" in local and "run-locally.md" in local, name
        assert not URL.search(local), name
    assert build.theme_options(None) == {}


def test_with_an_address_the_launch_buttons_are_the_themes(site_pages):
    """No line of our own: the page is the one without an address, less how to run it
    locally (the theme's buttons are at the top of the page)."""
    for entry in NOTEBOOKS:
        page = pages.site_notebook(stored(entry), entry, ADDRESS)
        _, without = site_pages[entry.name]
        assert [cell.id for cell in page.cells] \
            == [cell.id for index, cell in enumerate(without.cells) if index != 1]
        assert not any(links.BINDER in cell.source or links.COLAB in cell.source
                       for cell in page.cells if cell.cell_type == "markdown"), entry.name


def test_the_theme_options_point_each_notebook_page_at_its_notebook():
    """The theme links a notebook's page to {path_to_docs}/{page}.ipynb on repository_url at
    repository_branch, on the launch services given (tests/browser/test_site.py reads the
    built buttons)."""
    options = build.theme_options(ADDRESS)
    assert options["repository_url"] == "https://github.com/someone/causal-attention"
    assert options["repository_branch"] == "v1"
    assert options["use_repository_button"] is True
    written = pages.site_pages_of([(entry, None) for entry in NOTEBOOKS])
    for entry in NOTEBOOKS:
        assert f"{options['path_to_docs']}/{written[entry.path]}" == entry.path
    launch = options["launch_buttons"]
    assert launch["notebook_interface"] == "jupyterlab"  # lab/tree, as tools.links opens
    assert links.binder_url(ADDRESS.repo, "x.ipynb").startswith(launch["binderhub_url"] + "/")
    assert links.colab_url(ADDRESS.repo, "x.ipynb").startswith(launch["colab_url"] + "/")
    assert launch["jupyterhub_url"] == ADDRESS.hub
    without_hub = build.theme_options(pages.Address(ADDRESS.repo, ADDRESS.ref))
    assert "jupyterhub_url" not in without_hub["launch_buttons"]


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
    assert conf["mathjax_path"].startswith(f"{build.MATHJAX}/MathJax.js?config=")
    assert not URL.match(conf["mathjax_path"])
    assert conf["html_show_search_summary"] is False


def test_one_search_box_and_a_search_that_ranks_titles_first():
    """The parent theme's header bar, with a second search field, is left out; Sphinx
    loads the scorer (tests/browser/test_site.py checks the ranking in the built site)."""
    conf = runpy.run_path(str(ROOT / "tools" / "site" / "conf.py"))
    assert conf["html_theme_options"]["navbar_persistent"] == []
    scorer = Path(conf["html_search_scorer"])
    assert scorer.is_file() and "var Scorer" in scorer.read_text(encoding="utf-8")


def test_the_download_button_has_the_sources_it_offers():
    conf = runpy.run_path(str(ROOT / "tools" / "site" / "conf.py"))
    assert conf["html_theme_options"]["use_download_button"] is True
    assert conf["html_copy_source"] is True  # Sphinx writes _sources, the button's folder
