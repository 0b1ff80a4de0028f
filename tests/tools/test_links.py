"""tools.links: the launch links and the README rewrite."""

import shutil
import subprocess
import sys
from urllib.parse import parse_qs, urlparse

import pytest

from tools.course import notebook_paths
from tools.links import (
    ENVIRONMENT_FILES,
    NO_ADDRESS_NOTE,
    README_END,
    README_START,
    ROOT,
    binder_pull_url,
    binder_url,
    colab_url,
    environment_problem,
    environment_ref,
    links,
    main,
    nbgitpuller_url,
    pull_folder,
    readme_environment_refs,
    readme_table,
    rewrite_readme,
    write_links,
)

PATH = "notebooks/01_self_attention.ipynb"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def git(root, *args):
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def commit_all(root, message):
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q",
        "-m", message)
    return git(root, "rev-parse", "HEAD")


@pytest.fixture
def course_repo(tmp_path):
    """A git repository holding the course's README, environment.yml, postBuild and first
    notebook."""
    root = tmp_path / "course-copy"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(ROOT / "README.md", root)
    for name in ENVIRONMENT_FILES:
        shutil.copy2(ROOT / name, root)  # postBuild keeps its executable bit
    shutil.copy(ROOT / notebook_paths()[0], root / "notebooks")
    git(tmp_path, "init", "-q", str(root))
    commit_all(root, "the course")
    return root


def test_binder_opens_the_notebook_in_jupyterlab():
    assert binder_url("ann/course", PATH, "v1") == (
        "https://mybinder.org/v2/gh/ann/course/v1?urlpath=lab/tree/notebooks/01_self_attention.ipynb")


def test_binder_pull_link_is_nbgitpuller_s_form_for_binder():
    """As nbgitpuller's link generator writes it for Binder: the environment's repository
    at its ref, and in ``urlpath`` nbgitpuller's own query (repo, branch, urlpath), encoded
    as one value."""
    link = binder_pull_url("ann/course", PATH, COMMIT, "main")
    assert link == (
        f"https://mybinder.org/v2/gh/ann/course/{COMMIT}?urlpath=git-pull%3Frepo%3Dhttps"
        "%253A%252F%252Fgithub.com%252Fann%252Fcourse%26branch%3Dmain%26urlpath%3Dlab"
        "%252Ftree%252Fcourse%252Fnotebooks%252F01_self_attention.ipynb")
    url = urlparse(link)
    assert (url.netloc, url.path) == ("mybinder.org", f"/v2/gh/ann/course/{COMMIT}")
    [urlpath] = parse_qs(url.query, strict_parsing=True).pop("urlpath")
    assert parse_qs(url.query) == {"urlpath": [urlpath]}  # nothing else, no labpath
    pull = urlparse(urlpath)  # what Binder opens on the server once it runs
    assert pull.path == "git-pull"
    assert parse_qs(pull.query, strict_parsing=True) == {
        "repo": ["https://github.com/ann/course"], "branch": ["main"],
        "urlpath": [f"lab/tree/{pull_folder('ann/course')}/{PATH}"]}


def test_the_pull_goes_into_the_folder_named_after_the_repository():
    """nbgitpuller clones into the home's folder named after the last part of the
    repository's address (its handler: ``repo.split('/')[-1]``), where lab/tree opens."""
    assert pull_folder("ann/causal-attention") == "causal-attention"
    with pytest.raises(ValueError, match="repository's name"):
        binder_pull_url("ann/course", PATH, COMMIT, url="https://example.org/course.git")
    with pytest.raises(ValueError, match="repository's name"):
        binder_pull_url("ann/course", PATH, COMMIT, url="https://example.org/course/")


def test_binder_pull_link_refuses_a_commit_to_pull_and_a_bad_environment_ref():
    with pytest.raises(ValueError, match="branch"):
        binder_pull_url("ann/course", PATH, COMMIT, ref="4fb8efd")
    for bad in ("", "a/b", None):
        with pytest.raises(ValueError, match="environment_ref"):
            binder_pull_url("ann/course", PATH, bad)


def test_links_build_binder_from_the_environment_s_last_change_and_pull_the_branch():
    [row, *_] = links("ann/course", "v2")
    assert row["binder"] == binder_pull_url("ann/course", row["notebook"],
                                            environment_ref(), "v2")
    [row, *_] = links("ann/course", "4fb8efd")  # a commit: build and open that commit
    assert row["binder"] == binder_url("ann/course", row["notebook"], "4fb8efd")


def test_environment_ref_is_the_environment_s_last_change_and_waits_for_a_commit(
        course_repo):
    first = git(course_repo, "rev-parse", "HEAD")
    assert environment_ref(course_repo) == first
    (course_repo / "notebooks" / "new.txt").write_text("content only")
    commit_all(course_repo, "content")  # content changes: the same image
    assert environment_ref(course_repo) == first
    assert environment_problem(first, course_repo) is None
    environment = course_repo / "environment.yml"
    environment.write_text(environment.read_text() + "  - tqdm\n")
    with pytest.raises(ValueError, match="not committed"):
        environment_ref(course_repo)
    assert "changed after" in environment_problem(first, course_repo)
    second = commit_all(course_repo, "a dependency")
    assert environment_ref(course_repo) == second
    assert "changed after" in environment_problem(first, course_repo)
    assert environment_problem(second, course_repo) is None
    assert "not a commit" in environment_problem(COMMIT, course_repo)
    with pytest.raises(ValueError, match="git"):
        environment_ref(course_repo.parent)  # not a repository


def test_postbuild_is_part_of_the_environment(course_repo):
    """repo2docker runs postBuild into the image: a change of it is a change of the
    environment, as a change of environment.yml is."""
    first = environment_ref(course_repo)
    post_build = course_repo / "postBuild"
    post_build.write_text(post_build.read_text() + "echo built\n")
    with pytest.raises(ValueError, match="not committed"):
        environment_ref(course_repo)
    assert "changed after" in environment_problem(first, course_repo)
    second = commit_all(course_repo, "postBuild")
    assert environment_ref(course_repo) == second != first
    assert environment_problem(second, course_repo) is None
    assert "changed after" in environment_problem(first, course_repo)


def test_the_course_s_environment_ref_is_git_log_of_the_two_files():
    assert environment_ref() == git(ROOT, "log", "-1", "--format=%H", "--",
                                    "environment.yml", "postBuild")


def test_written_links_go_stale_when_binder_changes_until_written_again(course_repo):
    """What the check on the course's own README (below) sees, in a repository where the
    links are written: after a change of environment.yml or postBuild, until ``--write``
    runs again."""
    paths = notebook_paths()[:1]
    readme = course_repo / "README.md"
    write_links("ann/course", root=course_repo, paths=paths)
    [written] = readme_environment_refs(readme.read_text(encoding="utf-8"))
    assert written == environment_ref(course_repo)
    assert environment_problem(written, course_repo) is None
    environment = course_repo / "environment.yml"
    environment.write_text(environment.read_text() + "  - tqdm\n")
    commit_all(course_repo, "a dependency")
    assert "--write" in environment_problem(written, course_repo)
    write_links("ann/course", root=course_repo, paths=paths)
    [rewritten] = readme_environment_refs(readme.read_text(encoding="utf-8"))
    assert rewritten != written and environment_problem(rewritten, course_repo) is None


def test_the_readme_binder_links_build_the_environment_the_course_has():
    """Fails when environment.yml or postBuild changed after the commit the README's Binder
    links build from:
    run ``python -m tools.links OWNER/REPO --write`` again. Without a public address the
    README has no links (and says so), so there is nothing to go stale."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split(README_START)[1].split(README_END)[0]
    refs = readme_environment_refs(block)
    if NO_ADDRESS_NOTE in block:
        assert refs == set()
        return
    assert len(refs) == 1, f"the README's Binder links build from several commits: {refs}"
    assert environment_problem(refs.pop()) is None


def test_links_refuse_a_repository_name_the_image_already_has(course_repo):
    with pytest.raises(ValueError, match="notebooks/"):
        links("ann/notebooks", root=course_repo)


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
    assert "old" not in new and binder_pull_url("ann/course", PATH, environment_ref()) in new
    assert rewrite_readme(new, table) == new  # idempotent
    with pytest.raises(ValueError, match="launch-links"):
        rewrite_readme("no markers", table)


def test_the_readme_has_the_block_and_the_command_prints(capsys):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert README_START in readme and README_END in readme
    block = readme.split(README_START)[1].split(README_END)[0]
    if NO_ADDRESS_NOTE not in block:  # a public address: a row of links per notebook
        for path in notebook_paths():  # regenerate with --write when a notebook is added
            assert "/blob/" in block and f"/{path})" in block, \
                f"README's launch links miss {path}"
    assert main(["ann/course", "--ref", "v2"]) == 0
    out = capsys.readouterr().out
    assert "binder" in out and "colab" in out and "/blob/v2/" in out
    assert f"/v2/gh/ann/course/{environment_ref()}?urlpath=git-pull%3F" in out
    assert "branch%3Dv2%26" in out


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


def test_write_without_an_address_says_so_in_the_readme_and_the_cells(course_repo):
    import nbformat

    from tools.links import colab_setup_cells

    tmp_path = course_repo
    assert write_links(None, root=tmp_path, paths=notebook_paths()[:1]) == 1
    assert NO_ADDRESS_NOTE in (tmp_path / "README.md").read_text(encoding="utf-8")
    cell = colab_setup_cells(nbformat.read(tmp_path / notebook_paths()[0], 4))[0]
    assert "no public address yet" in cell.source and "git clone" not in cell.source
    assert write_links("ann/course", "v2", root=tmp_path, paths=notebook_paths()[:1]) == 1
    readme = (tmp_path / "README.md").read_text()
    assert f"mybinder.org/v2/gh/ann/course/{environment_ref(tmp_path)}?" in readme
    assert "branch%3Dv2%26" in readme
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
