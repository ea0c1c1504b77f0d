"""Two small models built from ``torch.ops.ctensor`` ops, and the same models on torch's own ops.

A model takes an op set: ``CTENSOR_OPS`` calls ``torch.ops.ctensor.<name>`` for every operator
(so its forward and backward, through the gradient registry, are ctensor ops), ``TORCH_OPS``
calls ``torch.nn.functional`` and is the reference. Both models hold their weights in ordinary
torch submodules (``nn.Conv2d``, ``nn.Linear``, ``nn.Embedding``, ``nn.LayerNorm``) used only as
parameter holders, so torch's default initialisation applies and the two variants share one
``state_dict`` layout:

- ``DigitsCNN(ops)``: conv2d, relu, max_pool2d, dropout, linear, cross_entropy on 8x8 digits;
- ``TinyTransformerLM(ops, vocab_size)``: embedding, layer_norm, scaled_dot_product_attention
  (causal), gelu, linear, cross_entropy, character level.

Training helpers: ``make_train_step`` (forward + loss under ``torch.compile(fullgraph=True)``,
backward, optimizer step), ``digits_split`` and ``digits_batches`` (scikit-learn's bundled
digits, a fixed split), ``text_corpus`` and ``text_batches`` (a text shipped by an installed
package), and ``graph_operators`` / ``foreign_operators``, which list the operators of the
forward and backward graphs torch.compile builds, to check that a model runs on ctensor alone;
``example_parser`` and ``run_check`` (from ``ctensor.example_support``), the command line the
examples share.

Dropout draws its mask from ctensor's Philox stream (``seed``, ``offset``): the caller passes
a new ``offset`` each training step (the step number); ``TORCH_OPS`` applies the mask that
ctensor's dropout draws for the same seed and offset (its second result, the bool mask),
with torch's own arithmetic (``x * mask * (1 / (1 - p))``).
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ctensor.example_support import (
    ctensor_op_set,
    digits_arrays,
    example_parser,
    masked_dropout,
    relative_difference,
    run_check,
)

__all__ = [
    "CTENSOR_OPS",
    "TORCH_OPS",
    "ALLOWED_VIEWS",
    "ACCUMULATE",
    "DigitsCNN",
    "TinyTransformerLM",
    "make_train_step",
    "digits_split",
    "digits_batches",
    "text_corpus",
    "encode_text",
    "dropout_keep_mask",
    "relative_difference",
    "example_parser",
    "run_check",
    "text_batches",
    "graph_operators",
    "foreign_operators",
]

_C = torch.ops.ctensor


# ----------------------------------------------------------------------------------------------
# The two op sets. Each is a namespace of the same functions with the same signatures.


def _ct_layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float):  # noqa: ANN202
    return _C.layer_norm(x, weight, bias, normalized_shape=[x.shape[-1]], eps=eps)


CTENSOR_OPS = ctensor_op_set(
    _C,
    "ctensor",
    embedding=lambda indices, weight: _C.embedding(indices, weight),
    attention=lambda q, k, v: _C.scaled_dot_product_attention(q, k, v, is_causal=True)[0],
    layer_norm=_ct_layer_norm,
    gelu=lambda x: _C.gelu(x),
    add=lambda a, b: _C.add(a, b),
    permute=lambda x, axes: _C.permute_dims(x, axes=list(axes)),
)
"""The op set of ``torch.ops.ctensor`` calls."""


def dropout_keep_mask(x: torch.Tensor, p: float, seed: int, offset: int) -> torch.Tensor:
    """The bool mask (true: kept) that ``torch.ops.ctensor.dropout`` draws for ``x`` with this
    seed and offset (it depends on x's shape only): its second result."""
    with torch.no_grad():
        return _C.dropout(x.detach(), p=p, seed=seed, offset=offset)[1]


_torch_dropout = masked_dropout(dropout_keep_mask, lambda keep, x: keep.to(x.dtype))


def _torch_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


TORCH_OPS = SimpleNamespace(
    name="torch",
    conv2d=lambda x, weight, bias, padding: F.conv2d(x, weight, bias, padding=padding),
    relu=F.relu,
    max_pool2d=lambda x, size: F.max_pool2d(x, size),
    linear=F.linear,
    cross_entropy=F.cross_entropy,
    dropout=_torch_dropout,
    embedding=F.embedding,
    attention=_torch_attention,
    layer_norm=lambda x, weight, bias, eps: F.layer_norm(x, (x.shape[-1],), weight, bias, eps),
    gelu=F.gelu,
    add=torch.add,
    permute=torch.permute,
)
"""The reference op set: torch's own operators (the dropout mask alone comes from ctensor)."""


# ----------------------------------------------------------------------------------------------
# The models.


class DigitsCNN(nn.Module):
    """A small CNN for 8x8 digit images (N, 1, 8, 8) -> logits (N, 10):
    conv3x3(1->c1) relu, conv3x3(c1->c2) relu, max_pool 2x2, dropout, linear(->hidden) relu,
    linear(->10). ``ops`` is ``CTENSOR_OPS`` or ``TORCH_OPS``."""

    def __init__(
        self,
        ops: SimpleNamespace = CTENSOR_OPS,
        *,
        channels: tuple[int, int] = (16, 32),
        hidden: int = 64,
        p: float = 0.25,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.ops = ops
        self.p = p
        self.seed = seed
        self.conv1 = nn.Conv2d(1, channels[0], 3, padding=1)
        self.conv2 = nn.Conv2d(channels[0], channels[1], 3, padding=1)
        self.fc1 = nn.Linear(channels[1] * 4 * 4, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, images: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Logits; ``offset`` is the dropout's Philox offset (a new one per training step)."""
        ops = self.ops
        h = ops.relu(ops.conv2d(images, self.conv1.weight, self.conv1.bias, 1))
        h = ops.relu(ops.conv2d(h, self.conv2.weight, self.conv2.bias, 1))
        h = ops.max_pool2d(h, 2)
        h = h.reshape(h.shape[0], -1)
        h = ops.dropout(h, self.p, self.seed, offset, self.training)
        h = ops.relu(ops.linear(h, self.fc1.weight, self.fc1.bias))
        return ops.linear(h, self.fc2.weight, self.fc2.bias)

    def loss(self, images: torch.Tensor, labels: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Mean cross entropy of a batch."""
        return self.ops.cross_entropy(self(images, offset), labels)


class _Block(nn.Module):
    """A pre-norm transformer block: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor, ops: SimpleNamespace) -> torch.Tensor:
        batch, length, d_model = x.shape
        heads = self.n_heads

        def split(t: torch.Tensor) -> torch.Tensor:  # (B, T, D) -> (B, H, T, D / H)
            return ops.permute(t.reshape(batch, length, heads, d_model // heads), (0, 2, 1, 3))

        h = ops.layer_norm(x, self.ln1.weight, self.ln1.bias, self.ln1.eps)
        q = split(ops.linear(h, self.query.weight, self.query.bias))
        k = split(ops.linear(h, self.key.weight, self.key.bias))
        v = split(ops.linear(h, self.value.weight, self.value.bias))
        a = ops.permute(ops.attention(q, k, v), (0, 2, 1, 3)).reshape(batch, length, d_model)
        x = ops.add(x, ops.linear(a, self.proj.weight, self.proj.bias))
        h = ops.layer_norm(x, self.ln2.weight, self.ln2.bias, self.ln2.eps)
        h = ops.gelu(ops.linear(h, self.fc1.weight, self.fc1.bias))
        return ops.add(x, ops.linear(h, self.fc2.weight, self.fc2.bias))


class TinyTransformerLM(nn.Module):
    """A character-level causal transformer: token and position embeddings, ``n_layers``
    pre-norm blocks (causal multi-head attention, a GELU MLP), a final layer norm and a linear
    head. ``tokens`` (B, context) int64 -> logits (B, context, vocab_size)."""

    def __init__(
        self,
        ops: SimpleNamespace = CTENSOR_OPS,
        vocab_size: int = 128,
        *,
        context: int = 32,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        d_ff: int = 256,
    ) -> None:
        super().__init__()
        self.ops = ops
        self.context = context
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList(_Block(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        self.register_buffer("positions", torch.arange(context), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        ops = self.ops
        if tokens.shape[-1] != self.context:
            raise ValueError(f"tokens must be (batch, {self.context}), got {tuple(tokens.shape)}")
        x = ops.add(
            ops.embedding(tokens, self.token_embedding.weight),
            ops.embedding(self.positions, self.position_embedding.weight),
        )
        for block in self.blocks:
            x = block(x, ops)
        x = ops.layer_norm(x, self.ln_f.weight, self.ln_f.bias, self.ln_f.eps)
        return ops.linear(x, self.head.weight, self.head.bias)

    def loss(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean next-character cross entropy over every position of the batch."""
        logits = self(tokens)
        return self.ops.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


# ----------------------------------------------------------------------------------------------
# Training.


def make_train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    compile: bool = True,
    backend: str | Callable = "inductor",
) -> Callable[..., torch.Tensor]:
    """One training step ``step(*batch) -> loss`` (detached): ``model.loss(*batch)`` (compiled
    with ``torch.compile(fullgraph=True, backend=backend)`` unless ``compile`` is false), its
    backward (the compiled backward graph) and ``optimizer.step()`` (eager). For ``DigitsCNN``
    the batch is (images, labels, offset), the offset being the dropout's (pass the step
    number: an int that changes every call stays a symbolic int in the compiled graph, after
    one recompilation); for ``TinyTransformerLM`` it is (tokens, targets)."""
    loss_fn = model.loss
    if compile:
        loss_fn = torch.compile(loss_fn, fullgraph=True, backend=backend)

    def step(*batch: Any) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(*batch)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def digits_split(
    dtype: torch.dtype = torch.float32, *, test_size: float = 0.25, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``ctensor.example_support.digits_arrays`` as torch tensors: images (N, 1, 8, 8) in
    ``dtype``, labels int64."""
    arrays = digits_arrays("float64", test_size=test_size, seed=seed)
    images_train, labels_train, images_test, labels_test = (torch.from_numpy(a) for a in arrays)
    return images_train.to(dtype), labels_train, images_test.to(dtype), labels_test


def digits_batches(count: int, batch_size: int, epoch: int, seed: int = 0) -> list[torch.Tensor]:
    """Index batches of one epoch over ``count`` samples: a permutation fixed by (seed, epoch),
    cut into full batches (the remainder is dropped, so every step has the same shape)."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    order = torch.randperm(count, generator=generator)
    return [order[i : i + batch_size] for i in range(0, count - batch_size + 1, batch_size)]


def text_corpus() -> str:
    """A text an installed package ships: scikit-learn's dataset descriptions
    (``sklearn/datasets/descr/*.rst``, about 43 000 characters), concatenated in name order."""
    from importlib import resources

    folder = resources.files("sklearn.datasets.descr")
    names = sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".rst"))
    return "".join(folder.joinpath(name).read_text(encoding="utf-8") for name in names)


def encode_text(text: str) -> tuple[torch.Tensor, list[str]]:
    """Character-level tokens (int64) and the vocabulary (the sorted distinct characters)."""
    vocabulary = sorted(set(text))
    index = {char: i for i, char in enumerate(vocabulary)}
    return torch.tensor([index[char] for char in text], dtype=torch.int64), vocabulary


def text_batches(
    tokens: torch.Tensor, batch_size: int, context: int, step: int, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of random windows (fixed by (seed, step)): inputs (batch_size, context) and the
    next-character targets, the same windows shifted by one."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + step)
    starts = torch.randint(0, tokens.numel() - context - 1, (batch_size,), generator=generator)
    windows = starts[:, None] + torch.arange(context + 1)
    chunk = tokens[windows]
    return chunk[:, :-1].contiguous(), chunk[:, 1:].contiguous()


# ----------------------------------------------------------------------------------------------
# Which operators a compiled model runs.

_aten = torch.ops.aten

#: Views, with no arithmetic and no copy: shape-only reinterpretations of a contiguous tensor's
#: memory (the model's ``reshape``, and the same on the gradients in the backward graph), and
#: ``detach``, the alias AOT autograd takes of an op's output that the backward reads.
ALLOWED_VIEWS = frozenset(
    {_aten.view.default, _aten._unsafe_view.default, _aten.reshape.default, _aten.detach.default}
)

#: ``aten.add.Tensor`` in the backward graph only: torch's autograd engine sums the gradients of
#: a tensor that has several uses (a transformer's residual stream), with no model operator
#: behind it.
ACCUMULATE = frozenset({_aten.add.Tensor})


def graph_operators(fn: Callable[..., torch.Tensor], *args: Any) -> dict[str, set]:
    """The operators (``OpOverload`` targets) of the forward and backward graphs that
    ``torch.compile(fn, fullgraph=True)`` builds (AOT autograd), found by running ``fn(*args)``
    compiled and calling ``backward()`` on its result: ``{"forward": {...}, "backward": {...}}``.
    The optimizer is not part of them."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    found: dict[str, set] = {"forward": set(), "backward": set()}

    def recorder(kind: str):  # noqa: ANN202
        def compiler(graph: torch.fx.GraphModule, example_inputs: Any):  # noqa: ANN202
            for node in graph.graph.nodes:
                if node.op == "call_function":
                    found[kind].add(node.target)
            return make_boxed_func(graph.forward)

        return compiler

    backend = aot_autograd(fw_compiler=recorder("forward"), bw_compiler=recorder("backward"))
    torch._dynamo.reset()
    try:
        loss = torch.compile(fn, backend=backend, fullgraph=True)(*args)
        loss.backward()
    finally:
        torch._dynamo.reset()
    return found


def _is_ctensor(target: Any) -> bool:
    return isinstance(target, torch._ops.OpOverload) and target.namespace == "ctensor"


def foreign_operators(
    found: dict[str, set], *, accumulate: frozenset = frozenset()
) -> dict[str, list[str]]:
    """The operators of ``graph_operators``'s result that are neither ``torch.ops.ctensor`` ops
    nor ``ALLOWED_VIEWS`` (nor, in the backward graph, those of ``accumulate``), by graph;
    Python's ``operator.getitem`` (taking one result of a multi-output op) is not an operator.
    Empty lists: the model runs on ctensor alone."""
    import operator

    result = {}
    for kind, targets in found.items():
        allowed = ALLOWED_VIEWS | (accumulate if kind == "backward" else frozenset())
        result[kind] = sorted(
            str(t)
            for t in targets
            if t is not operator.getitem and not _is_ctensor(t) and t not in allowed
        )
    return result
