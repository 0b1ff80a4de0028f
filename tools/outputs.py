"""A notebook's stored outputs against a new run's, compared as strict nbval compares them:
the text of each stream, result and display (pictures are not compared), in every code
cell not tagged ``nbval-ignore-output`` or ``nbval-skip``.

Used by `make check` (tools/check.py: were the stored outputs stale?) and by the package
profiles (.ci/profiles/check_profile.py: what other versions print).
"""

NOT_COMPARED = {"nbval-ignore-output", "nbval-skip"}


def compared_text(cell) -> dict:
    """What strict nbval compares of a code cell's outputs: each stream's text, and the
    text forms of results and displays."""
    text = {}
    for output in cell.outputs:
        if output.output_type == "stream":
            text[output.name] = text.get(output.name, "") + output.text
        elif output.output_type in ("execute_result", "display_data"):
            for kind in ("text/plain", "text/html"):
                if kind in output.get("data", {}):
                    text[kind] = text.get(kind, "") + output.data[kind]
        elif output.output_type == "error":
            text["error"] = f"{output.ename}: {output.evalue}"
    return text


def first_difference(stored: str, run: str) -> tuple:
    """The first line where two texts differ: (stored line, run line)."""
    stored_lines, run_lines = stored.splitlines(), run.splitlines()
    for index in range(max(len(stored_lines), len(run_lines))):
        old = stored_lines[index] if index < len(stored_lines) else ""
        new = run_lines[index] if index < len(run_lines) else ""
        if old != new:
            return old, new
    return "", ""


def output_differences(name: str, stored, run) -> list:
    """One record per compared code cell whose outputs differ between the ``stored``
    notebook and the ``run`` one (the same cells, run again): the notebook's ``name``, the
    cell's number and first line, which output differs, and its first differing line."""
    differences = []
    for number, (old, new) in enumerate(zip(stored.cells, run.cells, strict=True)):
        if old.cell_type != "code" or NOT_COMPARED & set(old.metadata.get("tags", [])):
            continue
        old_text, new_text = compared_text(old), compared_text(new)
        if old_text == new_text:
            continue
        kind = next(k for k in sorted(set(old_text) | set(new_text))
                    if old_text.get(k) != new_text.get(k))
        stored_line, run_line = first_difference(old_text.get(kind, ""), new_text.get(kind, ""))
        differences.append({
            "notebook": name, "cell": number,
            "source": next((line for line in old.source.splitlines() if line.strip()), ""),
            "output": kind, "stored": stored_line.strip(), "run": run_line.strip()})
    return differences
