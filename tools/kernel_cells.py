"""Running code in a Jupyter kernel as a cell, from a script: shared by the benchmarks that
drive a kernel of their own (benchmarks/explorer_memory.py, benchmarks/hub_sizing.py)."""


def run_code(client, code: str, timeout: float = 600) -> str:
    """Run ``code`` in the kernel of ``client`` (a jupyter_client blocking client) as a cell,
    kept in its history, waiting up to ``timeout`` seconds; return what it printed. Raises
    on an error in the cell."""
    printed, errors = [], []

    def keep(message):
        kind, content = message["header"]["msg_type"], message["content"]
        if kind == "stream" and content["name"] == "stdout":
            printed.append(content["text"])
        elif kind == "error":
            errors.append(f"{content['ename']}: {content['evalue']}")

    client.execute_interactive(code, timeout=timeout, output_hook=keep)
    if errors:
        raise RuntimeError(errors[0])
    return "".join(printed)
