"""What bench/decode.py and its peers (bench/peer_*_decode.py) share: the
blocks' shapes and a peer's command line."""

import argparse

MODELS = {
    # (D, heads, kv_heads)
    "gpt2": (768, 12, 12),
    "llama": (2048, 32, 8),
}


def peer_arguments(steps):
    """A peer's parser: --model --length --layers --threads --steps
    --check (the caller adds its own)."""
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=sorted(MODELS), default="gpt2")
    p.add_argument("--length", type=int, required=True)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--check", action="store_true")
    return p
