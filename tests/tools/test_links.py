"""tools.links: the launch links and the README rewrite."""

import sys
from urllib.parse import parse_qs, urlparse

import pytest

from tools.course import notebook_paths
from tools.links import (
    README_END,
    README_START,
    binder_url,
    colab_url,
    links,
    main,
    nbgitpuller_url,
    readme_table,
    rewrite_readme,
)

PATH = "notebooks/01_self_attention.ipynb"


def test_binder_opens_the_notebook_in_jupyterlab():
    assert binder_url("ann/course", PATH, "v1") == (
        "https://mybinder.org/v2/gh/ann/course/v1?urlpath=lab/tree/notebooks/01_self_attention.ipynb")


def test_colab_opens_the_notebook_from_github():
    assert colab_url("ann/course", PATH) == (
        "https://colab.research.google.com/github/ann/course/blob/main/" + PATH)


def test_nbgitpuller_link_names_repo_branch_and_path():
    url = urlparse(nbgitpuller_url("https://hub.example.org/", "ann/course", PATH, "dev"))
    assert url.netloc == "hub.example.org" and url.path == "/hub/user-redirect/git-pull"
    query = parse_qs(url.query)
    assert query == {"repo": ["https://github.com/ann/course"], "branch": ["dev"],
                     "urlpath": [f"lab/tree/course/{PATH}"]}


def test_every_notebook_gets_its_links():
    rows = links("ann/course", hub="https://hub.example.org")
    assert [row["notebook"] for row in rows] == notebook_paths()
    assert len(rows) >= 1 and all(set(row) == {"notebook", "binder", "colab", "jupyterhub"}
                                  for row in rows)


@pytest.mark.parametrize("repo", ["", "course", "a/b/c", "ann/co urse"])
def test_bad_repo_is_refused_with_a_message(repo):
    with pytest.raises(ValueError, match="OWNER/NAME"):
        binder_url(repo, PATH)


def test_bad_hub_is_refused():
    with pytest.raises(ValueError, match="hub"):
        nbgitpuller_url("hub.example.org", "ann/course", PATH)


def test_readme_rewrite_replaces_only_the_marked_block():
    text = f"intro\n{README_START}\nold\n{README_END}\noutro\n"
    table = readme_table(links("ann/course"))
    new = rewrite_readme(text, table)
    assert new.startswith("intro\n") and new.endswith(f"{README_END}\noutro\n")
    assert "old" not in new and binder_url("ann/course", PATH) in new
    assert rewrite_readme(new, table) == new  # idempotent
    with pytest.raises(ValueError, match="launch-links"):
        rewrite_readme("no markers", table)


def test_the_readme_has_the_block_and_the_command_prints(capsys):
    from tools.links import NO_ADDRESS_NOTE, ROOT
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert README_START in readme and README_END in readme
    block = readme.split(README_START)[1].split(README_END)[0]
    if NO_ADDRESS_NOTE not in block:  # a public address: a row of links per notebook
        for path in notebook_paths():  # regenerate with --write when a notebook is added
            assert f"lab/tree/{path}" in block, f"README's launch links miss {path}"
    assert main(["ann/course", "--ref", "v2"]) == 0
    out = capsys.readouterr().out
    assert "binder" in out and "colab" in out and "/v2?" in out


@pytest.mark.parametrize("url, repo", [
    ("https://github.com/ann/course.git", "ann/course"),
    ("git@github.com:ann/course.git", "ann/course"),
    ("https://github.com/ann/course", "ann/course"),
    ("https://gitlab.com/ann/course.git", None)])
def test_the_repository_comes_from_the_git_remote_when_not_given(tmp_path, url, repo):
    import subprocess

    from tools.links import repo_from_git_remote

    assert repo_from_git_remote(tmp_path) is None  # not a repository
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert repo_from_git_remote(tmp_path) is None  # no remote
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", url], check=True)
    assert repo_from_git_remote(tmp_path) == repo


def test_hub_links_refuse_a_commit():
    with pytest.raises(ValueError, match="branch"):
        nbgitpuller_url("https://hub.example.org", "ann/course", PATH, "4fb8efd")


def test_write_without_an_address_says_so_in_the_readme_and_the_cells(tmp_path):
    import shutil

    import nbformat

    from tools.links import NO_ADDRESS_NOTE, ROOT, colab_setup_cells, write_links

    shutil.copy(ROOT / "README.md", tmp_path)
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / notebook_paths()[0], tmp_path / "notebooks")
    assert write_links(None, root=tmp_path, paths=notebook_paths()[:1]) == 1
    assert NO_ADDRESS_NOTE in (tmp_path / "README.md").read_text(encoding="utf-8")
    cell = colab_setup_cells(nbformat.read(tmp_path / notebook_paths()[0], 4))[0]
    assert "no public address yet" in cell.source and "git clone" not in cell.source
    assert write_links("ann/course", "v2", root=tmp_path, paths=notebook_paths()[:1]) == 1
    assert "mybinder.org/v2/gh/ann/course/v2" in (tmp_path / "README.md").read_text()
    cell = colab_setup_cells(nbformat.read(tmp_path / notebook_paths()[0], 4))[0]
    assert "git clone --quiet https://github.com/ann/course" in cell.source


@pytest.mark.parametrize("repo", [None, "ann/course"])
def test_the_setup_cell_needs_only_the_standard_library_and_looks_in_colabs_content(repo):
    import ast

    from IPython.core.inputtransformer2 import TransformerManager

    from tools.links import colab_setup_source

    source = colab_setup_source(repo)
    tree = ast.parse(TransformerManager().transform_cell(source))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom)}
    assert "course_setup" in imported
    assert imported - {"course_setup", "google"} <= set(sys.stdlib_module_names)
    if repo is None:  # a copy on Colab (where uploads land) or in Drive, else an upload
        assert 'glob.glob(f"/content/{where}/course_setup.py")' in source
        assert '"drive/MyDrive/*"' in source
        assert {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                } == {"google.colab"}  # its files.upload(), Colab's own
        assert max(len(line) for line in source.splitlines()) <= 92  # a learner reads it
    else:
        assert "google" not in imported
        assert "git clone --quiet https://github.com/ann/course /content/" in source
