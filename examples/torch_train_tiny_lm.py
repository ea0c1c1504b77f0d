"""Train a two-layer character-level transformer where every operator is a ``torch.ops.ctensor`` op.

The model (``ctensor.torch.models.TinyTransformerLM``: embedding, layer_norm,
scaled_dot_product_attention with is_causal, gelu, linear, cross_entropy) runs its forward and
loss under ``torch.compile(fullgraph=True)``, its backward as the compiled backward graph of
ctensor ops, and Adam updates the weights. The text is one an installed package ships (no
download): scikit-learn's dataset descriptions (``sklearn/datasets/descr/*.rst``, about 43 000
characters), read with ``importlib.resources``; the last tenth is held out.

    python examples/torch_train_tiny_lm.py            # train, print the loss falling
    python examples/torch_train_tiny_lm.py --check    # float64: loss per step vs torch's ops
    python examples/torch_train_tiny_lm.py --quick    # a few steps (the tests)

``--check`` trains the same model built from torch's own ops (``TORCH_OPS``, same initial
weights and batches) side by side in float64 and prints the worst relative difference of the
losses over the first ``--check-steps`` steps; it exits with status 1 above 1e-9.
"""

from __future__ import annotations

import sys
import time

import torch

from ctensor.torch.models import (
    CTENSOR_OPS,
    TORCH_OPS,
    TinyTransformerLM,
    encode_text,
    example_parser,
    make_train_step,
    relative_difference,
    run_check,
    text_batches,
    text_corpus,
)

BATCH = 32
CONTEXT = 32
LEARNING_RATE = 3e-3
TOLERANCE = 1e-9


def data() -> tuple[torch.Tensor, torch.Tensor, int]:
    """(train tokens, held-out tokens, vocabulary size) of the corpus, character level."""
    tokens, vocabulary = encode_text(text_corpus())
    cut = tokens.numel() * 9 // 10
    return tokens[:cut], tokens[cut:], len(vocabulary)


def build(ops, vocab_size: int, dtype: torch.dtype, seed: int) -> TinyTransformerLM:  # noqa: ANN001
    """The transformer on ``ops`` with the initial weights that ``seed`` gives."""
    torch.manual_seed(seed)
    return TinyTransformerLM(ops, vocab_size, context=CONTEXT).to(dtype)


def held_out_loss(model: TinyTransformerLM, tokens: torch.Tensor, batches: int = 8) -> float:
    """Mean loss on ``batches`` fixed batches of held-out windows."""
    with torch.no_grad():
        losses = [
            model.loss(*text_batches(tokens, BATCH, CONTEXT, step)).item()
            for step in range(batches)
        ]
    return sum(losses) / len(losses)


def train(dtype: torch.dtype = torch.float32, *, steps: int = 300, seed: int = 0) -> dict:
    """Trains the ctensor model; returns its losses per step, the held-out loss before and
    after, and the seconds the steps took."""
    train_tokens, test_tokens, vocab_size = data()
    model = build(CTENSOR_OPS, vocab_size, dtype, seed)
    step = make_train_step(model, torch.optim.Adam(model.parameters(), lr=LEARNING_RATE))
    before = held_out_loss(model, test_tokens)
    losses: list[float] = []
    start = time.perf_counter()
    for index in range(steps):
        losses.append(step(*text_batches(train_tokens, BATCH, CONTEXT, index, seed)).item())
    seconds = time.perf_counter() - start
    return {
        "losses": losses,
        "held_out": (before, held_out_loss(model, test_tokens)),
        "seconds": seconds,
    }


def check(steps: int = 20, seed: int = 0) -> list[float]:
    """Relative difference of the float64 loss at each of the first ``steps`` steps between the
    compiled ctensor model and the same model on torch's own ops (eager)."""
    dtype = torch.float64
    train_tokens, _, vocab_size = data()
    models = [build(ops, vocab_size, dtype, seed) for ops in (CTENSOR_OPS, TORCH_OPS)]
    models[1].load_state_dict(models[0].state_dict())
    train_steps = [
        make_train_step(model, torch.optim.Adam(model.parameters(), lr=LEARNING_RATE), compile=c)
        for model, c in zip(models, (True, False), strict=True)
    ]
    differences = []
    for index in range(steps):
        batch = text_batches(train_tokens, BATCH, CONTEXT, index, seed)
        ours, reference = (s(*batch).item() for s in train_steps)
        differences.append(relative_difference(ours, reference))
    return differences


def main(argv: list[str] | None = None) -> int:
    parser = example_parser(
        __doc__.split("\n\n")[0],
        quick="30 steps (and --check: 10)",
        check_steps=20,
        reference="torch's own ops",
    )
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.quick:
        args.steps = min(args.steps, 30)
        args.check_steps = min(args.check_steps, 10)

    if args.check:
        return run_check(check, args.check_steps, args.seed, TOLERANCE)

    result = train(getattr(torch, args.dtype), steps=args.steps, seed=args.seed)
    losses = result["losses"]
    tenth = max(1, len(losses) // 10)
    first, last = sum(losses[:tenth]) / tenth, sum(losses[-tenth:]) / tenth
    print(f"steps: {len(losses)}, mean loss of the first and last tenth {first:.4f} -> {last:.4f}")
    print(f"held-out loss: {result['held_out'][0]:.4f} -> {result['held_out'][1]:.4f}")
    print(f"train time: {result['seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
