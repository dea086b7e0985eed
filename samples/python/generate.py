"""Greedy decoding of a small Hugging Face GPT-2 (randomly initialised from
a config: nothing is downloaded) with attnc kernels for every layer: one
prefill kernel for the prompt, then one-token decode steps that update each
layer's KV cache in place. Prints the tokens of both and their tokens per
second, and exits 1 when the tokens differ from Hugging Face `generate`'s.

    .venv/bin/python samples/python/generate.py [--layers 4] [--new 32]

The embeddings, the final LayerNorm and the LM head stay in torch; each of
the model's GPT2Blocks becomes an attnc.DecoderBlock (attnc.from_torch with
cache_length), which keeps its own cache: pos is the number of tokens
already in it.
"""

import argparse
import os
import time

# torch's OpenMP threads spin-wait after each torch op (libgomp's active
# wait) and take the cores from attnc's threads, which run right after:
# docs/python.md "torch and attnc in one loop". Read when torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

import attnc  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--prompt", type=int, default=8, help="prompt tokens")
    p.add_argument("--new", type=int, default=32, help="tokens to generate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--init", type=float, default=0.1,
                   help="the weights' standard deviation (GPT-2's 0.02 "
                   "makes a random model repeat its last token)")
    return p.parse_args()


class AttncGPT2:
    """The model's forward pass with attnc's blocks: logits of the last
    token of `tokens` [B, T], which start at position `pos`."""

    def __init__(self, model, batch, prompt, cache_length):
        t = model.transformer
        self.wte, self.wpe, self.ln_f = t.wte, t.wpe, t.ln_f
        self.lm_head = model.lm_head
        example = torch.zeros(batch, prompt, model.config.n_embd)
        self.layers = [attnc.from_torch(block, (example,),
                                        cache_length=cache_length)
                       for block in t.h]

    @torch.no_grad()
    def logits(self, tokens, pos):
        positions = torch.arange(pos, pos + tokens.shape[1])
        h = self.wte(tokens) + self.wpe(positions)
        for layer in self.layers:
            h = layer(h, pos)
        return self.lm_head(self.ln_f(h[:, -1]))

    def generate(self, prompt, new):
        tokens = prompt
        pos = 0
        for _ in range(new):
            fresh = tokens[:, pos:]
            next_token = self.logits(fresh, pos).argmax(dim=-1, keepdim=True)
            pos = tokens.shape[1]
            tokens = torch.cat([tokens, next_token], dim=1)
        return tokens


def timed(generate, new, batch):
    """generate's tokens and tokens per second, from a second run (the
    first compiles attnc's decode kernel and warms torch up)."""
    generate()
    start = time.perf_counter()
    tokens = generate()
    return tokens, new * batch / (time.perf_counter() - start)


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    config = GPT2Config(n_layer=args.layers, n_embd=args.hidden,
                        n_head=args.heads, vocab_size=args.vocab,
                        n_positions=args.prompt + args.new,
                        bos_token_id=0, eos_token_id=None, pad_token_id=0,
                        initializer_range=args.init)
    model = GPT2LMHeadModel(config).eval()
    prompt = torch.randint(args.vocab, (args.batch, args.prompt))

    with torch.no_grad():
        hf, hf_rate = timed(lambda: model.generate(
            prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
            max_new_tokens=args.new, min_new_tokens=args.new),
            args.new, args.batch)
    ours = AttncGPT2(model, args.batch, args.prompt,
                     args.prompt + args.new)
    mine, attnc_rate = timed(lambda: ours.generate(prompt, args.new),
                             args.new, args.batch)

    print(f"GPT-2 from a config: {args.layers} layers, hidden {args.hidden},"
          f" {args.heads} heads, vocabulary {args.vocab}; batch "
          f"{args.batch}, prompt {args.prompt} tokens, {args.new} new "
          f"tokens, {torch.get_num_threads()} torch threads, "
          f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}")
    for b in range(args.batch):
        print(f"hugging face [{b}]: {hf[b, args.prompt:].tolist()}")
        print(f"attnc        [{b}]: {mine[b, args.prompt:].tolist()}")
    same = torch.equal(hf, mine)
    print(f"same tokens: {'yes' if same else 'NO'}")
    print(f"tokens/s: hugging face generate {hf_rate:.1f}, attnc "
          f"{attnc_rate:.1f} ({attnc_rate / hf_rate:.2f}x)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
