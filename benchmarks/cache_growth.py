"""Tokens per second of greedy generation with the growing KV cache (``KVCache``: every
step ``torch.cat``s the cache into new tensors) and the pre-allocated one
(``StaticKVCache``: written in place), as the number of tokens T grows.

    .venv/bin/python benchmarks/cache_growth.py [--lengths 64,128,256,512,1024]
        [--rounds 5] [--d-model 32] [--num-heads 2] [--num-layers 2] [--batch-size 1]

An untrained TinyGPT (the time does not depend on the weights) with room for the longest
T writes T - 1 tokens after a one-token prompt in each of B sequences, with
``helpers.gpt.decoding.generate`` and either cache; tokens per second = B (T - 1) / time.
Both caches run in the same run, in rounds, each round in the other order, on one thread;
each figure is the fastest of the rounds. Also: the time of one step when the cache
already holds T - 1 tokens (the fastest of 20 on copies of one prefilled cache), where the
copy the growing cache makes is largest. It asserts nothing.
"""

import argparse
import copy
import os
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the course's helpers, however this script is started
from helpers.gpt.decoding import generate  # noqa: E402
from helpers.gpt.generation import KVCache, forward_with_cache  # noqa: E402
from helpers.gpt.model import TinyGPT  # noqa: E402
from helpers.gpt.static_cache import StaticKVCache  # noqa: E402

VOCAB = 16
STEPS_AT_T = 20  # one-token steps timed after a prefill of T - 1 tokens


def caches(model, B, T):
    """The two caches, as factories generate() calls: growing, and allocated for T."""
    return {"torch.cat": KVCache,
            "static": lambda: StaticKVCache.for_model(model, batch_size=B, max_tokens=T)}


def generation_seconds(model, B, T, factory) -> float:
    prompt = torch.zeros(B, 1, dtype=torch.long)
    start = time.perf_counter()
    generate(model, prompt, T - 1, cache_factory=factory)
    return time.perf_counter() - start


@torch.no_grad()
def step_seconds(model, T, factory, ids) -> float:
    """The fastest of STEPS_AT_T one-token steps, each on a copy of a cache of T - 1
    tokens."""
    cache = factory()
    forward_with_cache(model, ids[:, :T - 1], cache)  # the prefill, not timed
    fastest = float("inf")
    for _ in range(STEPS_AT_T):
        trial = copy.deepcopy(cache)  # not timed either
        start = time.perf_counter()
        forward_with_cache(model, ids[:, T - 1:T], trial)
        fastest = min(fastest, time.perf_counter() - start)
    return fastest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="64,128,256,512,1024")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--d-model", type=int, default=32)
    parser.add_argument("--num-heads", type=int, default=2)
    parser.add_argument("--num-layers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=1)
    arguments = parser.parse_args()
    lengths = [int(T) for T in arguments.lengths.split(",")]
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = TinyGPT(VOCAB, max(lengths), d_model=arguments.d_model,
                    num_heads=arguments.num_heads, num_layers=arguments.num_layers).eval()
    B = arguments.batch_size
    ids = torch.randint(0, VOCAB, (B, max(lengths)), generator=torch.Generator().manual_seed(0))
    print(f"torch {torch.__version__}, 1 thread, TinyGPT d_model={arguments.d_model}, "
          f"{arguments.num_heads} heads, {arguments.num_layers} layers, batch {B}; load average "
          f"before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    generation = {}  # (T, cache) -> the fastest seconds
    step = {}
    started = time.perf_counter()
    for round_number in range(arguments.rounds):
        for T in lengths:
            names = list(caches(model, B, T))
            if round_number % 2:
                names.reverse()  # each cache meets the machine's drift first in turn
            for name in names:
                factory = caches(model, B, T)[name]
                seconds = generation_seconds(model, B, T, factory)
                generation[T, name] = min(generation.get((T, name), float("inf")), seconds)
                seconds = step_seconds(model, T, factory, ids)
                step[T, name] = min(step.get((T, name), float("inf")), seconds)
    print(f"fastest of {arguments.rounds} rounds, measured in "
          f"{time.perf_counter() - started:.0f} s; load average after: "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print()
    print("|    T | tokens/s, torch.cat | tokens/s, static | static / cat "
          "| one step at T, cat | one step at T, static |")
    print("|---:|---:|---:|---:|---:|---:|")
    for T in lengths:
        cat = B * (T - 1) / generation[T, "torch.cat"]
        static = B * (T - 1) / generation[T, "static"]
        print(f"| {T:4d} | {cat:8.0f} | {static:8.0f} | {static / cat:5.2f} "
              f"| {1000 * step[T, 'torch.cat']:6.3f} ms | {1000 * step[T, 'static']:6.3f} ms |")


if __name__ == "__main__":
    main()
