"""install_torch.py, which `make` runs first: a CPU build of torch, never a CUDA one unasked.

The decision is tested with stand-ins for the network and for pip; the look-ups it may
skip raise when called, so each test also shows what is not asked.
"""

import http.server
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("install_torch", ROOT / "install_torch.py")
install_torch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(install_torch)

PIN = "2.13.0"
CPU_WHEEL = install_torch.Wheel(
    "file:///opt/wheels/torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl",
    "2.13.0+cpu", ["filelock", "sympy>=1.13.3"])
CUDA_WHEEL = install_torch.Wheel(
    "file:///mirror/torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl", "2.13.0",
    ["filelock", 'cuda-toolkit[cublas]==13.0.3; platform_system == "Linux"',
     'nvidia-cudnn-cu13==9.24.0.43; platform_system == "Linux"'])
CONSTRAINED = ["-c", str(ROOT / "constraints.txt")]


def not_asked(*_):
    raise AssertionError("looked up although the decision did not need it")


def answers(url):
    return None  # no error


def fails(url):
    return "[Errno -2] Name or service not known"


def plan(system="Linux", installed=None, index_url=install_torch.CPU_INDEX,
         index_error=not_asked, local=not_asked):
    return install_torch.plan(system, installed, PIN, index_url, index_error, local)


@pytest.mark.parametrize("installed", ["2.13.0+cpu", "2.13.0"])
def test_the_pinned_torch_installed_already_is_kept_without_looking_anything_up(installed):
    chosen = plan(installed=installed)
    assert chosen.pip_install == []
    assert installed in chosen.message


@pytest.mark.parametrize(("system", "name"), [("Darwin", "macOS"), ("Windows", "Windows")])
def test_macos_and_windows_take_pypis_torch_which_is_a_cpu_build_there(system, name):
    chosen = plan(system=system)
    assert chosen.pip_install == [*CONSTRAINED, "torch"]
    assert chosen.message == f"torch: installing torch {PIN} from PyPI (a CPU build on {name})"


def test_linux_takes_pytorchs_cpu_index_when_it_answers():
    asked = []
    chosen = plan(index_error=lambda url: asked.append(url))
    assert asked == ["https://download.pytorch.org/whl/cpu"]
    assert chosen.pip_install == [*CONSTRAINED, "--index-url", asked[0], "torch"]
    assert chosen.message == (
        f"torch: installing torch {PIN} from PyTorch's CPU index {asked[0]}")


def test_another_torch_version_installed_is_replaced_by_the_pinned_one():
    chosen = plan(installed="2.5.1+cpu", index_error=answers)
    assert chosen.pip_install[-1] == "torch" and "--index-url" in chosen.pip_install


def test_torch_index_url_replaces_the_cpu_index():
    mirror = "https://mirror.example/whl/cpu"
    chosen = plan(index_url=mirror, index_error=lambda url: None if url == mirror else "?")
    assert chosen.pip_install == [*CONSTRAINED, "--index-url", mirror, "torch"]
    assert chosen.message == f"torch: installing torch {PIN} from {mirror}"


def test_linux_without_the_index_takes_the_cpu_wheel_pip_finds_locally():
    chosen = plan(index_error=fails, local=lambda: CPU_WHEEL)
    assert chosen.pip_install == [*CONSTRAINED, CPU_WHEEL.url]
    assert chosen.message == (
        "torch: PyTorch's CPU index https://download.pytorch.org/whl/cpu did not answer "
        "([Errno -2] Name or service not known); "
        "installing torch 2.13.0+cpu, a CPU build that pip found locally: "
        "/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert "\n" not in chosen.message


@pytest.mark.parametrize("local", [None, CUDA_WHEEL], ids=["no local wheel", "a CUDA one"])
def test_linux_with_no_cpu_build_in_reach_downloads_nothing_and_says_how_to_choose(local):
    with pytest.raises(install_torch.NoCpuBuild) as raised:
        plan(index_error=fails, local=lambda: local)
    message = str(raised.value)
    assert "https://download.pytorch.org/whl/cpu did not answer ([Errno -2]" in message
    assert f"pip would download torch {PIN} for Linux: a CUDA build" in message
    assert "TORCH_INDEX_URL=URL" in message
    assert "TORCH_INDEX_URL=https://pypi.org/simple" in message


@pytest.mark.parametrize(("wheel", "cpu"), [
    (CPU_WHEEL, True),
    (CUDA_WHEEL, False),
    (install_torch.Wheel("x", "2.13.0", ["filelock", "sympy"]), True),  # e.g. macOS's
    (install_torch.Wheel("x", "2.13.0+cu126", ["filelock"]), False),
    (install_torch.Wheel("x", "2.13.0+rocm6.4", ["filelock"]), False),
    (install_torch.Wheel("x", "2.5.1", ["nvidia-cublas-cu12==12.4.5.8"]), False),
])
def test_a_cpu_build_is_told_from_a_gpu_build_by_its_label_or_its_dependencies(wheel, cpu):
    assert install_torch.is_cpu_build(wheel) is cpu


def test_the_pin_comes_from_constraints_txt():
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines()
            if line.startswith("torch==")]
    assert pins == [f"torch=={install_torch.pinned_torch()}"]


def serve(handler_class):
    server = http.server.HTTPServer(("127.0.0.1", 0), handler_class)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}/whl/cpu"


class Index(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200 if self.path == "/whl/cpu/torch/" else 404)
        self.end_headers()
        self.wfile.write(b"<a href='torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl'>...</a>")

    def log_message(self, *args):
        pass


def test_an_index_with_a_torch_page_answers_and_one_without_does_not():
    server, url = serve(Index)
    try:
        assert install_torch.index_error(url) is None
        assert install_torch.index_error(url + "/") is None
        assert install_torch.index_error(url.replace("/cpu", "/cu126")) == "HTTP 404"
    finally:
        server.shutdown()


def test_an_index_that_does_not_answer_is_given_up_after_the_timeout(monkeypatch):
    monkeypatch.setattr(install_torch, "TIMEOUT_S", 0.5)
    silent = socket.create_server(("127.0.0.1", 0))  # accepts connections, never replies
    try:
        started = time.monotonic()
        error = install_torch.index_error(f"http://127.0.0.1:{silent.getsockname()[1]}/x")
        assert "timed out" in error
        assert time.monotonic() - started < 3
    finally:
        silent.close()


def test_an_unreachable_or_malformed_index_is_told_at_once():
    with socket.create_server(("127.0.0.1", 0)) as probe:
        free_port = probe.getsockname()[1]  # closed below: nothing listens there
    assert "refused" in install_torch.index_error(f"http://127.0.0.1:{free_port}/simple")
    assert "unknown url type" in install_torch.index_error("not a url")


def test_the_local_wheel_is_read_from_pips_report(monkeypatch):
    report = {"install": [{"download_info": {"url": CPU_WHEEL.url},
                           "metadata": {"version": "2.13.0+cpu",
                                        "requires_dist": CPU_WHEEL.requires}}]}
    calls = []

    def run(args, **_):
        calls.append(args)
        return subprocess.CompletedProcess(args, 0, stdout=json.dumps(report), stderr="")

    monkeypatch.setattr(install_torch.subprocess, "run", run)
    assert install_torch.local_wheel() == CPU_WHEEL
    [args] = calls
    assert {"--dry-run", "--no-index", "--no-deps", "--report"} <= set(args)
    assert args[:3] == [sys.executable, "-m", "pip"] and args[-1] == "torch"


def test_no_local_wheel_is_none(monkeypatch):
    monkeypatch.setattr(install_torch.subprocess, "run", lambda args, **_: (
        subprocess.CompletedProcess(args, 1, stdout="", stderr="ERROR: No matching dist")))
    assert install_torch.local_wheel() is None


def test_the_makefile_installs_torch_with_it_before_the_course():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\n$(STAMP):")[1].split("\n\n")[0].splitlines()[1:]
    installs = [line.strip() for line in recipe if "install" in line]
    assert installs == ["$(BIN)/python install_torch.py $(TORCH_INDEX_URL)",
                        "$(BIN)/python -m pip install --quiet -c constraints.txt -e ."]
