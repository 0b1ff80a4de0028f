"""The website's source pages, written from the course's own files: the home page and the
pages for running the course, for lecturers and for hub admins from sections of the
README; one page per notebook from its stored outputs; one page per exercise's solution.

Nothing here is written by hand twice: a page takes its text from where the course keeps
it (README.md, the notebooks, solutions/, course.toml) and adds only what a website needs
and sphinx-book-theme cannot give (links between its pages, a line where a notebook has a
live widget, how to run a notebook when the course has no public address). The launch,
download and repository buttons are the theme's (build.py sets them from ``Address``).
"""

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from helpers.widgets.explorer import EXPLORER_CLASS
from tools import course, links, reading_time
from tools.slides import WIDGET_VIEW

NOTES = "notes"  # the slide type of a lecturer's notes cell
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
SETUP_TAG = links.COLAB_SETUP_TAG
LIVE_TITLE = "Live in Jupyter"
# A markdown link or image: [text](target), ![alt](target).
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6}) +(.*)$", flags=re.M)
EXERCISE_HEADING = re.compile(r"^### +Exercise\b.*$", flags=re.M)


@dataclass(frozen=True)
class Address:
    """Where the course is published, as tools.links builds its launch links from: a
    GitHub repository and a ref, and optionally a JupyterHub for nbgitpuller links."""

    repo: str
    ref: str = "main"
    hub: str = None

    def __post_init__(self):
        # A bad repo, ref or hub says so here, not in the middle of a build.
        links.colab_url(self.repo, "any.ipynb", self.ref)
        if self.hub:
            links.nbgitpuller_url(self.hub, self.repo, "any.ipynb", self.ref)

    def file_url(self, path: str) -> str:
        """A file of the course on GitHub, at the same ref (for the README's links to the
        course's files: the theme links only to the repository itself)."""
        return f"{links.repo_url(self.repo)}/blob/{self.ref}/{path}"


def readme_address(readme: str):
    """The address the README's launch links use (what ``python -m tools.links OWNER/REPO
    --write`` wrote); None when the course has none yet."""
    found = links.readme_repo_and_ref(readme)
    return None if found is None else Address(*found)


# -- README sections -----------------------------------------------------------------------
# The theme renders pages, it does not write them: the home page and the pages around the
# course are cut from the README here, so that their text lives in one place.

def sections(readme: str) -> dict:
    """The README cut at its ``## `` headings: {"": the text before the first one,
    heading: its section's text without the heading line}."""
    parts = re.split(r"^## +(.+)\n", readme, flags=re.M)
    found = {"": parts[0]}
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        found[heading.strip()] = body
    return found


def section(readme: str, heading: str) -> str:
    found = sections(readme)
    if heading not in found:
        raise ValueError(f"README.md has no section '## {heading}', which the website "
                         f"takes a page from (tools/site/pages.py)")
    return found[heading].strip()


def without_comments(text: str) -> str:
    return re.sub(r"[ \t]*<!--.*?-->[ \t]*\n?", "", text, flags=re.S)


def without_launch_block(text: str) -> str:
    """The text without the README's launch-link block (its badges are pictures on the
    network; the theme's launch buttons on the notebook pages carry the links)."""
    if links.README_START not in text:
        return text
    before, rest = text.split(links.README_START, 1)
    return before.rstrip() + "\n" + rest.split(links.README_END, 1)[1]


def site_links(text: str, pages: dict, address) -> str:
    """The text's links to files of the course pointed at the website's page for that file
    (``pages``: file -> page), else at the file on GitHub, else (no public address) made
    plain text; links to the web and within the page are left alone."""
    def replace(match):
        bang, label, target = match.groups()
        path, hash_, anchor = target.partition("#")
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            return match.group(0)
        if path in pages:
            return f"{bang}[{label}]({pages[path]}{hash_}{anchor})"
        if address is not None:
            return f"{bang}[{label}]({address.file_url(path)}{hash_}{anchor})"
        return label
    return LINK.sub(replace, text)


def notebook_title(notebook) -> tuple:
    """(number, title) from the notebook's first heading, e.g. ("2", "Causal masking")."""
    first = HEADING.search(notebook.cells[0].source)
    number, _, title = first.group(2).partition(". ")
    return (number, title) if title else ("", first.group(2))


def notebook_list(readme: str, titles: dict) -> str:
    """The README's list of notebooks (with their times), each named by its title and
    linked to its page; notebooks without a page (``titles`` names those with one) left
    out."""
    text = readme.split(reading_time.LIST_START, 1)[1].split(reading_time.LIST_END, 1)[0]
    kept = []
    for line in text.strip().splitlines():
        named = re.match(r"\d+\. \[`notebooks/(\w+)\.ipynb`\]\(notebooks/\1\.ipynb\)", line)
        if named and named.group(1) not in titles:
            continue
        if named:
            name = named.group(1)
            line = line.replace(named.group(0), f"{len(kept) + 1}. [{titles[name]}]({name}.ipynb)")
        kept.append(line)
    return "\n".join(kept)


def run_it_here(address, what: str = "this notebook", page: str = "run-locally.md") -> str:
    """How to run a notebook: where its launch buttons are, or, with no public address (the
    theme has no button then), how to run it on one's own machine."""
    if address is None:
        return (f"**Run {what}** on your machine: in the course's folder, `make lab` "
                f"installs the course and opens it in JupyterLab ([how]({page})).")
    return (f"**Run {what}** live: the launch button (the rocket) at the top of each "
            f"notebook's page opens it on Binder, on Colab"
            f"{' or on the JupyterHub' if address.hub else ''}; or run it on your machine "
            f"([how]({page})).")


def site_pages_of(notebooks: list) -> dict:
    """Each notebook's file -> its page."""
    return {notebook.path: f"{notebook.name}.ipynb" for notebook, _ in notebooks}


def home_page(readme: str, notebooks: list, address) -> str:
    titles = {notebook.name: title for notebook, (_, title) in notebooks}
    pages = site_pages_of(notebooks)
    intro = sections(readme)[""].strip()
    listed = section(readme, "The notebooks")
    after_list = listed.split(reading_time.LIST_END, 1)[1].strip()
    credits = section(readme, "Credits and licence")
    toc = "\n".join(notebook.name for notebook, _ in notebooks)
    return "\n\n".join([
        intro,
        "## The notebooks",
        notebook_list(readme, titles),
        site_links(after_list, pages, address),
        "## Run it",
        run_it_here(address, "a notebook"),
        "Teaching with it, or running it for a class: [for lecturers](lecturers.md), "
        "[for hub admins](hub-admins.md).",
        "## Credits and licence",
        site_links(credits, pages, address),
        f"```{{toctree}}\n:hidden:\n:caption: Notebooks\n\n{toc}\n```",
        "```{toctree}\n:hidden:\n:caption: Around the course\n\nrun-locally\nlecturers\n"
        "hub-admins\n```",
    ]) + "\n"


def run_locally_page(readme: str, notebooks: list, address) -> str:
    pages = site_pages_of(notebooks)
    body = "\n\n".join([
        "## Two commands", section(readme, "Two commands"),
        "## Requirements", section(readme, "Requirements")])
    return f"# Run it on your machine\n\n{site_links(body, pages, address)}\n"


def lecturers_page(readme: str, notebooks: list, address) -> str:
    pages = site_pages_of(notebooks)
    body = site_links(section(readme, "Teaching with it"), pages, address)
    return ("# For lecturers\n\n" + body + "\n\nThe notebooks' pages on this website leave "
            "the lecturer's notes out: they are in the notebooks themselves.\n")


def hub_admins_page(readme: str, notebooks: list, address) -> str:
    pages = site_pages_of(notebooks)
    body = section(readme, "For hub admins")
    text = f"# For hub admins\n\n{site_links(body, pages, address)}\n"
    if address is not None and address.hub:
        # Every notebook's link on one page, to hand out: the theme gives each page its own.
        rows = [f"- [{notebook.name}]"
                f"({links.nbgitpuller_url(address.hub, address.repo, notebook.path, address.ref)})"
                for notebook, _ in notebooks]
        text += (f"\n## The links for {address.hub}\n\nOne nbgitpuller link per notebook, "
                 f"for {address.repo} at {address.ref}:\n\n" + "\n".join(rows) + "\n")
    return text


# -- Notebooks -----------------------------------------------------------------------------

def solution_page_name(exercise) -> str:
    """The solution's page, relative to the website's root, without its suffix."""
    return f"solutions/{exercise.notebook}/{Path(exercise.solution).stem}"


def exercise_label(exercise) -> str:
    return f"exercise-{exercise.notebook}-{exercise.answer}".lower().replace("_", "-")


def is_notes(cell) -> bool:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type") == NOTES


def live_widget_ids(cell) -> list:
    return [output["data"][WIDGET_VIEW]["model_id"] for output in cell.get("outputs", [])
            if WIDGET_VIEW in output.get("data", {})]


def is_explorer(notebook, model_id: str) -> bool:
    state = notebook.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    return EXPLORER_CLASS in state.get(model_id, {}).get("state", {}).get("_dom_classes", [])


def live_widget_note(notebook, cell, address) -> str:
    """A markdown cell's text, in place of a cell that shows a live widget: what it is and
    that it is live in Jupyter (a static page has no kernel; no theme option says this)."""
    where = ("(the launch button at the top of the page opens it)" if address
             else "(run it on your machine)")
    if any(is_explorer(notebook, model_id) for model_id in live_widget_ids(cell)):
        what = (f"Open this notebook in Jupyter {where} and the cell "
                f"`{cell.source.strip()}` shows the explorer itself, live: move its controls "
                f"and the picture above follows.")
    else:
        fallback = " ".join(output["data"].get("text/plain", "") for output in cell.outputs
                            if WIDGET_VIEW in output.get("data", {}))
        what = (f"In Jupyter {where}, the cell `{cell.source.strip()}` shows a live widget. "
                f"{fallback}")
    return f"```{{admonition}} {LIVE_TITLE}\n:class: course-live\n\n{what}\n```"


ALT_LIMIT = 125  # characters on one line: the common advice for an alt text
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")
CLAUSE_END = re.compile(r"[,;:] ")
QUOTE = re.compile(r"(?<![A-Za-z])'|'(?![A-Za-z])")
MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # ASCII punctuation, escaped


def short_alt(description: str, limit: int = ALT_LIMIT) -> str:
    """A picture's alt text from its description: the leading sentences that fit in
    ``limit`` characters; a first sentence longer than that cut at its last clause
    (comma, semicolon or colon) that fits, with an ellipsis."""
    sentences = SENTENCE_END.split(" ".join(description.split()))
    alt = sentences[0]
    for sentence in sentences[1:]:
        if len(alt) + 1 + len(sentence) > limit:
            break
        alt = f"{alt} {sentence}"
    if len(alt) <= limit:
        return alt
    clauses = [found.start() for found in CLAUSE_END.finditer(alt, 0, limit)]
    # Not inside a quoted title: an even number of quotes before the cut (an apostrophe,
    # between two letters, is no quote).
    outside = [cut for cut in clauses if len(QUOTE.findall(alt, 0, cut)) % 2 == 0]
    cut = max(outside or clauses or [0])
    if cut < limit // 3:  # no clause long enough: the last word that fits
        cut = alt.rfind(" ", 0, limit)
    return alt[:cut].rstrip(" ,;:") + "…"


def picture_options(cell) -> dict:
    """MyST-NB's options for the cell's pictures: the alt text each stored picture carries
    in its output's metadata (MyST-NB reads only width and height there, and otherwise
    writes the file's name as alt text). One alt text per cell: MyST-NB takes image options
    per cell. The notebooks store a whole description (up to 500 characters), too long for
    an alt text: the image gets its leading sentences (``short_alt``), and, when that leaves
    some out, the whole description is the picture's caption (MyST-NB's figure option,
    which frames each of the cell's outputs: a cell with a caption has one output)."""
    shown = [output for output in cell.get("outputs", [])
             if output.get("output_type") in ("display_data", "execute_result")]
    alts = {output.get("metadata", {}).get("image/png", {}).get("alt")
            for output in shown if "image/png" in output.get("data", {})}
    if not alts:
        return {}
    if None in alts or "" in alts or len(alts) > 1:
        raise ValueError(f"a cell's pictures need one alt text each, and one per cell, in "
                         f"the output's metadata; the cell {cell.source[:60]!r} has {alts}")
    description = alts.pop().strip()
    alt = short_alt(description)
    if alt == description:
        return {"image": {"alt": alt}}
    if len(shown) > 1:
        raise ValueError(f"a picture's description becomes its caption, which MyST-NB gives "
                         f"each output of the cell: the cell {cell.source[:60]!r} shows "
                         f"{len(shown)} outputs; show the picture in a cell of its own")
    caption = MARKDOWN_PUNCTUATION.sub(r"\\\1", description)  # as written, not as markdown
    return {"image": {"alt": alt}, "figure": {"caption": caption}}


def site_notebook(notebook, entry, address, solutions_prefix: str = "") -> nbformat.NotebookNode:
    """The notebook as its page shows it: the lecturer's notes left out, each picture with
    its alt text, each live widget replaced by a line saying it is live in Jupyter, the
    setup cell's code folded, a link to each exercise's solution, and, with no public
    address (so no launch button), a line under the title saying how to run it locally."""
    page = nbformat.from_dict(notebook)
    cells = []
    for cell in page.cells:
        if is_notes(cell):
            continue
        if cell.cell_type == "code" and live_widget_ids(cell):
            note = nbformat.v4.new_markdown_cell(live_widget_note(page, cell, address))
            note.id = f"{cell.get('id', len(cells))}-live"  # the same on every build
            cells.append(note)
            continue
        if cell.cell_type == "code":
            options = picture_options(cell)
            if options:
                cell.metadata.setdefault("mystnb", {}).update(options)
            if SETUP_TAG in cell.metadata.get("tags", []):
                cell.metadata["tags"] = [*cell.metadata["tags"], "hide-input"]
        cells.append(cell)
    page.cells = cells
    page.metadata.pop("widgets", None)  # no widget manager: nothing live is left
    for exercise in entry.exercises:
        add_solution_link(page, exercise, solutions_prefix)
    if address is None:
        local = nbformat.v4.new_markdown_cell(run_it_here(None))
        local.id = "course-run-locally"  # the same on every build: a page unchanged is not rebuilt
        page.cells.insert(1, local)
    return page


def add_solution_link(page, exercise, prefix: str = "") -> None:
    """After the exercise's ``%load`` line, a link to the solution's page; a label on the
    exercise's heading for the link back."""
    [loads] = [cell for cell in page.cells
               if cell.cell_type == "markdown" and exercise.load_line in cell.source] or [None]
    if loads is None:
        raise ValueError(f"{exercise.notebook}: no markdown cell holds the line "
                         f"{exercise.load_line!r} for the exercise {exercise.answer}")
    index = page.cells.index(loads)
    heading = next(cell for cell in reversed(page.cells[:index + 1])
                   if cell.cell_type == "markdown" and EXERCISE_HEADING.search(cell.source))
    heading.source = EXERCISE_HEADING.sub(
        lambda found: f"({exercise_label(exercise)})=\n{found.group(0)}", heading.source,
        count=1)
    loads.source = (loads.source.rstrip() + f"\n\nThe solution is on [a page of its own]"
                    f"({prefix}{solution_page_name(exercise)}.md): try the check and its "
                    f"hints first.")


def solution_page(exercise, root: Path = course.ROOT) -> str:
    """The solution's own page, from solutions/ (a notebook's page must not show it, and
    the theme knows nothing of exercises)."""
    code = (root / exercise.solution_path).read_text(encoding="utf-8").rstrip()
    number = 1 + [item.answer for item in exercise_siblings(exercise)].index(exercise.answer)
    reference = (f"exercise {number} of notebook {int(exercise.notebook[:2])} "
                 f"<{exercise_label(exercise)}>")
    return f"""---
orphan: true
---

# Solution: `{exercise.answer}`

The solution to {{ref}}`{reference}`.
Try the check and its hints first: `{exercise.check_name}({exercise.answer})` names the
mistake your answer looks like, and `{exercise.check_name}.hint()` nudges further.

```python
{code}
```

In the notebook, `{exercise.load_line}` in a new cell pastes this code.
"""


def exercise_siblings(exercise) -> tuple:
    return next(entry.exercises for entry in course.notebooks()
                if entry.name == exercise.notebook)


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` unless the file holds it already (Sphinx then rebuilds only what
    changed); True if it was written."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def write_sources(source_dir: Path, address, names=None, root: Path = course.ROOT) -> list:
    """Every source page of the website in ``source_dir`` (files that hold what they
    would be written with are left as they are, and files of no page are removed); the
    notebooks of ``names`` only, if given. Returns the pages' paths, relative to
    ``source_dir``."""
    readme = (root / "README.md").read_text(encoding="utf-8")
    entries = [entry for entry in course.notebooks() if names is None or entry.name in names]
    notebooks = [(entry, notebook_title(nbformat.read(root / entry.path, as_version=4)))
                 for entry in entries]
    pages = {
        "index.md": home_page(readme, notebooks, address),
        "run-locally.md": run_locally_page(readme, notebooks, address),
        "lecturers.md": lecturers_page(readme, notebooks, address),
        "hub-admins.md": hub_admins_page(readme, notebooks, address),
    }
    for entry in entries:
        notebook = nbformat.read(root / entry.path, as_version=4)
        pages[f"{entry.name}.ipynb"] = nbformat.writes(site_notebook(notebook, entry, address))
        for exercise in entry.exercises:
            pages[f"{solution_page_name(exercise)}.md"] = solution_page(exercise, root)
    for name, text in pages.items():
        write_if_changed(source_dir / name, text)
    for path in source_dir.rglob("*"):
        if path.is_file() and path.relative_to(source_dir).as_posix() not in pages:
            path.unlink()
    return sorted(pages)
