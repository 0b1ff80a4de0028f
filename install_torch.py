"""Install the CPU build of the pinned torch into this Python (`make` runs it in .venv).

The course needs no GPU, and on Linux the torch wheel on PyPI is a CUDA build that
brings several GB of NVIDIA libraries with it. Unless the pinned torch is installed
already, this picks a CPU build and says in one line where it comes from:

- macOS, Windows: from PyPI, where torch is a CPU build;
- Linux: from PyTorch's CPU index if it answers within a few seconds; otherwise a CPU
  wheel that pip finds without any index (a wheel folder in pip's find-links, as on CI);
  otherwise it stops and says how to choose. It never downloads a CUDA build unasked.

    python install_torch.py [INDEX_URL]

INDEX_URL (make: TORCH_INDEX_URL=...) replaces PyTorch's CPU index, e.g. with a mirror;
https://pypi.org/simple asks for PyPI's CUDA build. Standard library only: it runs in a
fresh venv that holds nothing but pip.
"""

import json
import platform
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlparse
from urllib.request import url2pathname

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CONSTRAINTS = Path(__file__).resolve().parent / "constraints.txt"
TIMEOUT_S = 5
PIP = [sys.executable, "-m", "pip"]


class Wheel(NamedTuple):
    """A torch wheel pip would install: where from, its version and its dependencies."""

    url: str
    version: str
    requires: list


class Plan(NamedTuple):
    message: str
    pip_install: list  # arguments after `pip install`; empty: nothing to install


class NoCpuBuild(Exception):
    """No CPU build of torch is within reach; the message says how to choose."""


def is_cpu_build(wheel: Wheel) -> bool:
    """A CPU build: labelled +cpu, or unlabelled and needing no CUDA package."""
    label = wheel.version.partition("+")[2]
    if label:
        return label == "cpu"
    return not any(req.lower().startswith(("nvidia-", "cuda-")) for req in wheel.requires)


def plan(system: str, installed: str | None, pinned: str, index_url: str,
         index_error: Callable[[str], str | None], local_wheel: Callable[[], Wheel | None]
         ) -> Plan:
    """What to install. The index and local look-ups are called only when needed."""
    constrained = ["-c", str(CONSTRAINTS)]
    if installed is not None and installed.partition("+")[0] == pinned:
        return Plan(f"torch: {installed} is installed already", [])
    if system != "Linux":
        name = {"Darwin": "macOS"}.get(system, system)
        return Plan(f"torch: installing torch {pinned} from PyPI (a CPU build on {name})",
                    [*constrained, "torch"])
    index = ("PyTorch's CPU index " if index_url == CPU_INDEX else "") + index_url
    error = index_error(index_url)
    if error is None:
        return Plan(f"torch: installing torch {pinned} from {index}",
                    [*constrained, "--index-url", index_url, "torch"])
    wheel = local_wheel()
    if wheel is not None and is_cpu_build(wheel):
        where = url2pathname(urlparse(wheel.url).path) if wheel.url.startswith("file:") \
            else wheel.url
        return Plan(f"torch: {index} did not answer ({error}); installing torch "
                    f"{wheel.version}, a CPU build that pip found locally: {where}",
                    [*constrained, wheel.url])
    raise NoCpuBuild(
        f"torch: {index} did not answer ({error}), and pip finds no CPU build of torch "
        f"{pinned} without an index.\n"
        f"From PyPI, pip would download torch {pinned} for Linux: a CUDA build, several GB "
        "with its NVIDIA libraries. The course needs no GPU, so nothing was downloaded.\n"
        "Run make again once the index answers, or choose where torch comes from:\n"
        "  make lab TORCH_INDEX_URL=URL    # URL: a CPU index you can reach (a mirror of\n"
        f"                                  # {CPU_INDEX})\n"
        "  make lab TORCH_INDEX_URL=https://pypi.org/simple    # accept PyPI's CUDA build")


def pinned_torch(constraints: Path = CONSTRAINTS) -> str:
    for line in constraints.read_text().splitlines():
        name, _, version = line.partition("==")
        if name.strip().lower() == "torch":
            return version.strip()
    raise SystemExit(f"{constraints} pins no torch version (torch==X.Y.Z)")


def installed_torch() -> str | None:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def index_error(index_url: str) -> str | None:
    """Why the index's torch page cannot be fetched within TIMEOUT_S; None if it can.
    Only the response's headers are read, not the page."""
    try:
        with urllib.request.urlopen(index_url.rstrip("/") + "/torch/", timeout=TIMEOUT_S):
            return None
    except urllib.error.HTTPError as error:
        return f"HTTP {error.code}"
    except urllib.error.URLError as error:
        return str(error.reason)
    except (OSError, ValueError) as error:  # a timeout while reading headers, a bad URL
        return str(error) or type(error).__name__


def local_wheel() -> Wheel | None:
    """The torch wheel pip would install with no index at all (only its find-links)."""
    result = subprocess.run(
        [*PIP, "install", "--dry-run", "--no-index", "--no-deps", "--ignore-installed",
         "--quiet", "--report", "-", "-c", str(CONSTRAINTS), "torch"],
        capture_output=True, text=True)
    if result.returncode != 0:
        if "no such option" in result.stderr:
            print(f"torch: pip {metadata.version('pip')} cannot look for a local wheel (pip "
                  ">= 22.2 can: python -m pip install --upgrade pip)", file=sys.stderr)
        return None
    [item] = json.loads(result.stdout)["install"]
    return Wheel(item["download_info"]["url"], item["metadata"]["version"],
                 item["metadata"].get("requires_dist", []))


def main(argv: list) -> int:
    index_url = argv[1] if len(argv) > 1 and argv[1] else CPU_INDEX
    try:
        chosen = plan(platform.system(), installed_torch(), pinned_torch(), index_url,
                      index_error, local_wheel)
    except NoCpuBuild as error:
        print(error, file=sys.stderr)
        return 1
    print(chosen.message, flush=True)
    if chosen.pip_install:
        return subprocess.call([*PIP, "install", "--quiet", *chosen.pip_install])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
