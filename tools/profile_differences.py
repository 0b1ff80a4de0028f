"""The table of output differences on other package stacks, in benchmarks/README.md.

    make profiles                              # writes build/profiles/NAME/differences.json
    python -m tools.profile_differences        # puts them in benchmarks/README.md

Each package profile (.ci/profiles) runs every notebook and compares its outputs with the
stored ones (.ci/profiles/check_profile.py); every difference it finds must be accounted
for in .ci/profiles/differences.toml. This writes what the last run of each profile found,
with its account, between the table's markers in benchmarks/README.md.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "benchmarks" / "README.md"
START, END = "<!-- profile-differences:start -->", "<!-- profile-differences:end -->"
SHOWN = ["torch", "numpy", "matplotlib", "ipywidgets", "ipykernel"]


def cell_text(text: str, limit: int = 60) -> str:
    text = text.replace("|", "\\|")
    return f"`{text[:limit]}`" + ("…" if len(text) > limit else "") if text else "(nothing)"


def table(runs: list) -> str:
    lines = []
    for run in runs:
        versions = ", ".join(f"{name} {run['versions'][name]}" for name in SHOWN)
        count = len(run["differences"])
        lines += ["", f"**{run['profile']}** ({versions}): {count} code cell(s) differ.", ""]
        if not count:
            continue
        lines += ["| notebook | cell | first line | stored | this profile | why it is harmless |",
                  "|---|---:|---|---|---|---|"]
        for item in run["differences"]:
            lines.append(
                f"| {item['notebook'][:2]} | {item['cell']} | {cell_text(item['source'], 40)} "
                f"| {cell_text(item['stored'])} | {cell_text(item['run'])} "
                f"| {item['account'] or '**not accounted for**'} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    runs = [json.loads(path.read_text())
            for path in sorted((ROOT / "build" / "profiles").glob("*/differences.json"))]
    if not runs:
        print("no profile has run yet: make profiles", file=sys.stderr)
        return 1
    readme = README.read_text(encoding="utf-8")
    before, rest = readme.split(START)
    _, after = rest.split(END)
    README.write_text(before + START + "\n" + table(runs) + END + after, encoding="utf-8")
    print(f"{README.relative_to(ROOT)}: {sum(len(r['differences']) for r in runs)} "
          f"difference(s) from {len(runs)} profile(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
