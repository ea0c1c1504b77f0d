"""The one per-op table: what the schemas cannot say about sensible cases. Ops not listed get
cases derived from their schema alone (element-wise and broadcasting ops, defaults for every
attribute).

An entry may give:
  shapes   list of input-shape tuples, one shape per input (None: an absent optional input; a
           list of shapes: the tensors of a variadic input);
  attrs    list of attribute sets (dicts, or functions of the dtype signature returning one),
           crossed with shapes; combinations that ct_op_infer refuses are dropped;
  domains  {input index: domain} where a domain is a name in cases.DOMAINS or a tuple
           ("index", low, high) / ("range", low, high);
  edges    False: no edge values mixed in (ops whose edge semantics the reference cannot state,
           or where indices must stay valid);
  derived  {input index: (forward op, input indices)}: that input is the forward's NumPy
           reference on those inputs of the case (a backward op's `out`), not random values;
  no_broadcast  input indices never given the broadcast layout (a normalisation's x: rows
           constant along the normalised axes have variance 0, and 1/sqrt(eps) then magnifies
           the rounding of their mean beyond any fixed tolerance).
"""

from __future__ import annotations

INT64_MAX = 2**63 - 1

# Shape sets shared by many ops.
UNARY_SHAPES = [((),), ((0,),), ((7,),), ((3, 4),), ((2, 3, 4),), ((2, 1, 3),)]
NONEMPTY_SHAPES = [((),), ((7,),), ((3, 4),), ((2, 3, 4),), ((2, 1, 3),)]
BINARY_SHAPES = [
    ((), ()),
    ((5,), (5,)),
    ((3, 1), (1, 4)),
    ((2, 3, 4), (4,)),
    ((0, 3), (1, 3)),
    ((3, 4), ()),
    ((2, 1, 4), (3, 1)),
]
MATRIX_SHAPES = [((3, 4),), ((2, 3, 5),), ((4, 4),), ((0, 3),), ((1, 2, 2, 3),)]
REDUCE_ATTRS = [
    {},
    {"axis": [0]},
    {"axis": [-1], "keepdims": True},
    {"axis": [0, 2]},
    {"keepdims": True},
]
NCHW = [((2, 3, 7, 8),), ((1, 2, 5, 5),), ((0, 2, 4, 4),)]
# (grad_out, x) of a reduction's backward op: grad_out in each reduced shape REDUCE_ATTRS gives.
REDUCE_GRAD_SHAPES = [
    ((), (2, 3, 4)),
    ((3, 4), (2, 3, 4)),
    ((2, 3, 1), (2, 3, 4)),
    ((3,), (2, 3, 4)),
    ((1, 1, 1), (2, 3, 4)),
    ((), (3, 4)),
    ((4,), (3, 4)),
    ((3, 1), (3, 4)),
    ((), ()),
    ((3,), (0, 3)),
]
# (grad_out, x, out): out in the reduced shape too.
REDUCE_GRAD_OUT_SHAPES = [(g, x, g) for g, x in REDUCE_GRAD_SHAPES if 0 not in x]
# (grad_out, x) of a scan's backward op.
SCAN_GRAD_SHAPES = [
    ((7,), (7,)),
    ((8,), (7,)),
    ((3, 4), (3, 4)),
    ((3, 5), (3, 4)),
    ((1,), ()),
    ((2,), ()),
]
# (grad_out, input) of the pooling cases on NCHW: the attribute sets pick the matching pairs.
POOL_BACKWARD_SHAPES = [
    ((2, 3, 3, 4), (2, 3, 7, 8)),
    ((1, 2, 2, 2), (1, 2, 5, 5)),
    ((0, 2, 2, 2), (0, 2, 4, 4)),
    ((2, 3, 4, 4), (2, 3, 7, 8)),
    ((1, 2, 3, 3), (1, 2, 5, 5)),
    # grad_out of the (H, W)-pair attribute sets below
    ((2, 3, 5, 4), (2, 3, 7, 8)),
    ((1, 2, 4, 3), (1, 2, 5, 5)),
    ((2, 3, 4, 7), (2, 3, 7, 8)),
    ((1, 2, 3, 4), (1, 2, 5, 5)),
    ((2, 3, 6, 4), (2, 3, 7, 8)),
    ((2, 3, 5, 5), (2, 3, 7, 8)),
]

SCATTER_REDUCTIONS = ["none", "add", "multiply", "max", "min"]

OPS: dict[str, dict] = {
    # ---------------------------------------------------------------- element-wise extras
    "pow": {"domains": {0: "small", 1: "exponent"}},
    "bitwise_left_shift": {"domains": {1: "shift"}},
    "bitwise_right_shift": {"domains": {1: "shift"}},
    "elu": {"attrs": [{}, {"alpha": 0.5}]},
    "leaky_relu": {"attrs": [{}, {"negative_slope": 0.2}]},
    "gelu": {"attrs": [{}, {"approximate": "tanh"}]},
    "softplus": {"attrs": [{}, {"beta": 2.0, "threshold": 5.0}]},
    "astype": {"attrs": [lambda sig: {"dtype": sig[-1]}]},
    "clip": {
        "shapes": [
            ((3, 4), (3, 4), (3, 4)),
            ((3, 4), (4,), None),
            ((3, 4), None, (3, 1)),
            ((2, 3), (), ()),
            ((0, 2), (), (2,)),
            ((5,), None, None),
        ]
    },
    "where": {
        "shapes": [
            ((3, 4), (3, 4), (3, 4)),
            ((3, 1), (1, 4), ()),
            ((0, 2), (2,), (1, 2)),
            ((), (), ()),
        ]
    },
    # ---------------------------------------------------------------- reductions and scans
    "sum": {"attrs": REDUCE_ATTRS},
    "sum_to_shape": {
        "shapes": [
            ((3, 4), (3, 4)),
            ((2, 3, 4), (4,)),
            ((2, 3, 4), (3, 1)),
            ((5, 1, 4), (1, 1, 1)),
            ((0, 3), (3,)),
            ((4,), ()),
        ]
    },
    "prod": {"attrs": REDUCE_ATTRS, "domains": {0: "small"}},
    "mean": {"attrs": REDUCE_ATTRS},
    "all": {"attrs": REDUCE_ATTRS, "domains": {0: "few"}},
    "any": {"attrs": REDUCE_ATTRS, "domains": {0: "few"}},
    "max": {"attrs": REDUCE_ATTRS, "shapes": NONEMPTY_SHAPES},
    "min": {"attrs": REDUCE_ATTRS, "shapes": NONEMPTY_SHAPES},
    "var": {"attrs": REDUCE_ATTRS + [{"axis": [1], "correction": 1.0}]},
    "std": {"attrs": REDUCE_ATTRS + [{"axis": [1], "correction": 1.0}]},
    "logsumexp": {"attrs": REDUCE_ATTRS},
    "vector_norm": {
        "attrs": REDUCE_ATTRS
        + [
            {"ord": 1.0},
            {"ord": 0.0, "axis": [1]},
            {"ord": 3.0, "keepdims": True},
            {"ord": 0.5, "axis": [-1]},
            {"ord": -1.0},
            {"ord": float("inf"), "axis": [0, 2]},
            {"ord": float("-inf"), "axis": [1]},
        ],
        "shapes": NONEMPTY_SHAPES,
    },
    "argmax": {
        "attrs": [{}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"keepdims": True}],
        "shapes": NONEMPTY_SHAPES,
    },
    "argmin": {
        "attrs": [{}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"keepdims": True}],
        "shapes": NONEMPTY_SHAPES,
    },
    "cumulative_sum": {"attrs": [{}, {"axis": 0}, {"axis": -1, "include_initial": True}]},
    "cumulative_prod": {
        "attrs": [{}, {"axis": 0}, {"axis": -1, "include_initial": True}],
        "domains": {0: "small"},
    },
    # ---------------------------------------------------------------- their backward ops
    "sum_backward": {"attrs": REDUCE_ATTRS, "shapes": REDUCE_GRAD_SHAPES},
    "mean_backward": {"attrs": REDUCE_ATTRS, "shapes": REDUCE_GRAD_SHAPES},
    "prod_backward": {
        "attrs": REDUCE_ATTRS,
        "shapes": REDUCE_GRAD_SHAPES,
        "domains": {1: "small"},
    },
    "max_backward": {"attrs": REDUCE_ATTRS, "shapes": REDUCE_GRAD_OUT_SHAPES},
    "min_backward": {"attrs": REDUCE_ATTRS, "shapes": REDUCE_GRAD_OUT_SHAPES},
    "logsumexp_backward": {
        "attrs": REDUCE_ATTRS,
        "shapes": REDUCE_GRAD_OUT_SHAPES,
        "domains": {1: "small", 2: "small"},
    },
    "var_backward": {
        "attrs": REDUCE_ATTRS + [{"axis": [1], "correction": 1.0}],
        "shapes": REDUCE_GRAD_SHAPES + [((2, 4), (2, 3, 4))],
    },
    "std_backward": {
        "attrs": REDUCE_ATTRS + [{"axis": [1], "correction": 1.0}],
        "shapes": REDUCE_GRAD_OUT_SHAPES + [((2, 4), (2, 3, 4), (2, 4))],
    },
    "vector_norm_backward": {
        "attrs": REDUCE_ATTRS
        + [
            {"ord": 1.0},
            {"ord": 0.0},
            {"ord": 3.0, "keepdims": True},
            {"ord": 1.5, "axis": [0]},
            {"ord": 0.5, "axis": [-1], "keepdims": True},
            {"ord": float("inf")},
            {"ord": float("-inf"), "axis": [0, 2]},
        ],
        "shapes": REDUCE_GRAD_OUT_SHAPES,
        "domains": {2: "positive"},
    },
    "cumulative_sum_backward": {
        "attrs": [{}, {"axis": 0}, {"axis": -1, "include_initial": True}],
        "shapes": SCAN_GRAD_SHAPES,
    },
    "cumulative_prod_backward": {
        "attrs": [{}, {"axis": 0}, {"axis": -1, "include_initial": True}],
        "shapes": [(g, x, g) for g, x in SCAN_GRAD_SHAPES],
        "domains": {1: "small", 2: "small"},
    },
    "softmax": {"attrs": [{}, {"axis": 0}], "shapes": NONEMPTY_SHAPES[1:]},
    "log_softmax": {"attrs": [{}, {"axis": 0}], "shapes": NONEMPTY_SHAPES[1:]},
    # ---------------------------------------------------------------- linear algebra
    "matmul": {
        "shapes": [
            ((3, 4), (4, 5)),
            ((4,), (4, 3)),
            ((2, 3, 4), (4, 2)),
            ((5,), (5,)),
            ((2, 1, 3, 4), (3, 4, 2)),
            ((0, 4), (4, 3)),
            ((3, 0), (0, 2)),
            ((3, 4), (4,)),
        ],
        "domains": {0: "small", 1: "small"},
    },
    "matmul_backward": {
        "shapes": [
            ((3, 5), (3, 4), (4, 5)),
            ((3,), (4,), (4, 3)),
            ((2, 3, 2), (2, 3, 4), (4, 2)),
            ((), (5,), (5,)),
            ((2, 3, 3, 2), (2, 1, 3, 4), (3, 4, 2)),
            ((0, 3), (0, 4), (4, 3)),
            ((3, 2), (3, 0), (0, 2)),
            ((3,), (3, 4), (4,)),
        ],
        "domains": {0: "small", 1: "small", 2: "small"},
    },
    "vecdot": {
        "shapes": [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((4, 3), (4, 3)), ((0, 2), (2,))],
        "attrs": [{}, {"axis": 0}],
        "domains": {0: "small", 1: "small"},
    },
    "linear": {
        "shapes": [
            ((3, 4), (5, 4), (5,)),
            ((3, 4), (5, 4), None),
            ((4,), (2, 4), (2,)),
            ((2, 3, 4), (5, 4), (5,)),
        ]
    },
    "einsum": {
        "shapes": [
            ([(3, 4), (4, 5)],),
            ([(4, 4)],),
            ([(3, 4)],),
            ([(2, 3, 4), (2, 4, 5)],),
            ([(5,), (5,)],),
            ([(2, 3, 4), (4, 5)],),
            ([(2, 1, 3), (4, 3)],),
            ([(3, 4), (4, 5), (5, 2)],),
            ([(3, 3), (3, 4), (2, 4), (4,)],),
        ],
        "attrs": [
            {"subscripts": "ij,jk->ik"},
            {"subscripts": "ii->i"},
            {"subscripts": "ij"},
            {"subscripts": "bij,bjk->bik"},
            {"subscripts": "i,i"},
            {"subscripts": "ij->ji"},
            {"subscripts": "...ij,...jk->...ik"},
            {"subscripts": "...i,...i"},
            {"subscripts": "ij,jk,kl->il"},
            {"subscripts": "ij,jk,kl"},
            {"subscripts": "ii,ij,...j,j->...i"},
        ],
        "domains": {0: "small", 1: "small", 2: "small", 3: "small"},
    },
    "einsum_backward": {
        "shapes": [
            ((3, 5), [(3, 4), (4, 5)]),
            ((4,), [(4, 4)]),
            ((), [(4, 4)]),
            ((4, 3), [(3, 4)]),
            ((2, 3, 5), [(2, 3, 4), (2, 4, 5)]),
            ((), [(5,), (5,)]),
            ((2, 3, 5), [(2, 3, 4), (4, 5)]),
            ((4, 2), [(2, 1, 3), (4, 3)]),
            ((3, 2), [(3, 4), (4, 5), (5, 2)]),
            ((2, 3), [(3, 3), (3, 4), (2, 4), (4,)]),
        ],
        "attrs": [
            {"subscripts": "ij,jk->ik"},
            {"subscripts": "ii->i"},
            {"subscripts": "ii"},
            {"subscripts": "ij->ji"},
            {"subscripts": "bij,bjk->bik"},
            {"subscripts": "i,i"},
            {"subscripts": "...ij,...jk->...ik"},
            {"subscripts": "...i,...i"},
            {"subscripts": "ij,jk,kl->il"},
            {"subscripts": "ii,ij,...j,j->...i"},
        ],
        "domains": {0: "small", 1: "small", 2: "small", 3: "small", 4: "small"},
    },
    # ---------------------------------------------------------------- shape and indexing
    "broadcast_to": {
        "shapes": [((3, 1),), ((),), ((4,),)],
        "attrs": [{"shape": [2, 3, 4]}, {"shape": [3]}, {"shape": [0, 4]}],
    },
    "concat": {
        "shapes": [
            ([(2, 3), (4, 3)],),
            ([(2, 3), (2, 1)],),
            ([(2, 3), (4,)],),
            ([(0, 3), (2, 3), (1, 3)],),
        ],
        "attrs": [{}, {"axis": 1}, {"axis": None}, {"axis": -1}],
    },
    "stack": {
        "shapes": [([(2, 3), (2, 3), (2, 3)],), ([(), ()],), ([(0, 2), (0, 2)],)],
        "attrs": [{}, {"axis": -1}, {"axis": 1}],
    },
    "flip": {"attrs": [{}, {"axis": [0]}, {"axis": [-1, 0]}]},
    "matrix_transpose": {"shapes": MATRIX_SHAPES},
    "permute_dims": {
        "shapes": [((2, 3, 4),), ((3, 4),), ((),)],
        "attrs": [{"axes": [2, 0, 1]}, {"axes": [1, 0]}, {"axes": []}],
    },
    "repeat": {
        "shapes": [((3, 4),), ((5,),), ((),)],
        "attrs": [
            {"repeats": [2]},
            {"repeats": [1, 0, 2], "axis": 0},
            {"repeats": [2], "axis": 1},
            {"repeats": [3], "axis": None},
        ],
    },
    "roll": {
        "shapes": [((3, 4),), ((6,),), ((0, 2),)],
        "attrs": [
            {"shift": [1]},
            {"shift": [-2], "axis": [1]},
            {"shift": [1, 2], "axis": [0, 1]},
            {"shift": [7], "axis": [0]},
        ],
    },
    "slice": {
        "shapes": [((5, 6),), ((7,),), ((0, 3),)],
        "attrs": [
            {"start": [1], "stop": [4]},
            {"start": [4], "stop": [0], "step": [-1]},
            {"start": [0, 1], "stop": [5, 6], "step": [2, 2]},
            {"start": [-2], "stop": [INT64_MAX]},
        ],
    },
    "pad": {
        "shapes": [((3, 4),), ((5,),), ((2, 3, 2),)],
        "attrs": [
            {"pad_width": [1]},
            {"pad_width": [1, 2]},
            {"pad_width": [0, 1, 2, 0], "mode": "reflect"},
            {"pad_width": [2, 1], "mode": "edge"},
            {"pad_width": [1, 0], "value": 2.0},
        ],
    },
    "tile": {
        "shapes": [((2, 3),), ((4,),), ((),)],
        "attrs": [{"repetitions": [2]}, {"repetitions": [2, 1, 2]}],
    },
    "tril": {"shapes": MATRIX_SHAPES, "attrs": [{}, {"k": 1}, {"k": -1}]},
    "triu": {"shapes": MATRIX_SHAPES, "attrs": [{}, {"k": 1}, {"k": -1}]},
    "take": {
        "shapes": [((5, 4), (3,)), ((5, 4), (2, 2)), ((6,), (4,))],
        "attrs": [{"axis": 0}, {"axis": 1}, {"axis": None}],
        "domains": {1: ("index_of", 0)},
        "edges": False,
    },
    "take_along_axis": {
        "shapes": [((4, 5), (4, 3)), ((4, 5), (2, 5)), ((6,), (4,))],
        "attrs": [{}, {"axis": 0}],
        "domains": {1: ("index_of", 0)},
        "edges": False,
    },
    "embedding": {
        "shapes": [((3, 4), (10, 5)), ((6,), (7, 3)), ((), (4, 2))],
        "domains": {0: ("index_of", 1)},
        "edges": False,
    },
    "put_along_axis": {
        "shapes": [
            ((4, 5), (4, 3), (4, 3)),
            ((4, 5), (2, 5), (2, 5)),
            ((6,), (9,), ()),
            ((1, 5), (3, 2), (3, 1)),
            ((2, 3, 4), (2, 1, 6), (6,)),
            ((0, 3), (0, 2), (0, 2)),
        ],
        "attrs": [{"axis": -1, "reduction": r} for r in SCATTER_REDUCTIONS]
        + [{"axis": 0, "reduction": "none"}, {"axis": 0, "reduction": "add"}],
        "domains": {1: ("index_of", 0)},
        "edges": False,
    },
    "gather_nd": {
        "shapes": [
            ((4, 4, 3), (5, 2)),
            ((4, 4), (2, 3, 1)),
            ((2, 4, 3), (2, 5, 1)),
            ((4, 4), (0, 2)),
        ],
        "attrs": [{}, {"batch_dims": 1}],
        "domains": {1: ("index_of", 0)},
        "edges": False,
    },
    "scatter_nd": {
        "shapes": [
            ((4, 4, 3), (5, 2), (5, 3)),
            ((4, 4), (3, 1), (3, 4)),
            ((5,), (6, 1), (6,)),
            ((3, 3), (0, 2), (0,)),
        ],
        "attrs": [{"reduction": r} for r in SCATTER_REDUCTIONS],
        "domains": {1: ("index_of", 0)},
        "edges": False,
    },
    "index_select": {
        "shapes": [((5, 4), (3,)), ((5, 4), ()), ((3, 4, 2), (6,)), ((5, 4), (0,))],
        "attrs": [{"axis": 0}, {"axis": 1}, {"axis": -1}],
        "domains": {1: ("index_of", 0)},
        "edges": False,
    },
    "index_add": {
        "shapes": [
            ((5, 4), (6,), (6, 4)),
            ((5, 4), (6,), (5, 6)),
            ((5,), (), (1,)),
            ((0, 3), (2,), (0, 2)),
        ],
        "attrs": [{"axis": 0}, {"axis": 1, "alpha": 2.0}, {"axis": -1}],
        "domains": {1: ("index_of", 0)},
        "edges": False,
    },
    "one_hot": {
        "shapes": [((6,),), ((2, 3),), ((0,),)],
        "attrs": [{"num_classes": 5}],
        "domains": {0: ("index", 0, 5)},
        "edges": False,
    },
    "searchsorted": {
        "shapes": [((10,), (3, 4)), ((1,), (5,)), ((0,), (3,)), ((6,), ())],
        "attrs": [{}, {"side": "right"}],
        "domains": {0: "sorted", 1: "ties"},
    },
    # ---------------------------------------------------------------- sorting and selection
    "sort": {"attrs": [{}, {"axis": 0}, {"descending": True}], "domains": {0: "ties"}},
    "argsort": {"attrs": [{}, {"axis": 0}, {"descending": True}], "domains": {0: "ties"}},
    "argpartition": {
        "shapes": [((5, 6),), ((7,),), ((3, 4, 5),)],
        "attrs": [{"kth": 2}, {"kth": -1}, {"kth": [0, 3]}, {"kth": 1, "axis": 0}],
        "domains": {0: "ties"},
    },
    "topk": {
        "shapes": [((5, 6),), ((7,),), ((3, 0),)],
        "attrs": [{"k": 3}, {"k": 2, "largest": False}, {"k": 0}, {"k": 2, "axis": 0}],
        "domains": {0: "ties"},
    },
    # ---------------------------------------------------------------- dynamic-allocating
    "nonzero": {"domains": {0: "few"}},
    "argwhere": {"domains": {0: "few"}},
    "boolean_mask": {"shapes": [((3, 4), (3, 4)), ((3, 4), (3,)), ((0,), (0,)), ((2, 3), (2, 3))]},
    "unique_values": {"domains": {0: "ties"}},
    "unique_counts": {"domains": {0: "ties"}},
    "unique_inverse": {"domains": {0: "ties"}},
    "unique_all": {"domains": {0: "ties"}},
    # ---------------------------------------------------------------- deep learning
    "adaptive_avg_pool2d": {
        "shapes": NCHW,
        "attrs": [
            {"output_size": [4, 4]},
            {"output_size": [3, 2]},
            {"output_size": [1]},
            {"output_size": [5, 7]},  # windows overlapping
        ],
    },
    "avg_pool2d": {
        "shapes": NCHW,
        "attrs": [
            {"kernel_size": [2]},
            {"kernel_size": [3], "stride": [2], "padding": [1]},
            {"kernel_size": [3], "ceil_mode": True, "count_include_pad": False, "stride": [2]},
            {"kernel_size": [2], "divisor_override": 3},
            {"kernel_size": [2], "stride": [2], "padding": [2, 1]},  # beyond half the kernel
            # every parameter a distinct (H, W) pair
            {"kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 0], "ceil_mode": True},
            {"kernel_size": [2, 3], "stride": [1, 2], "padding": [0, 1], "divisor_override": 5},
        ],
    },
    "max_pool2d": {
        "shapes": NCHW,
        "attrs": [
            {"kernel_size": [2]},
            {"kernel_size": [3], "stride": [2], "padding": [1]},
            {"kernel_size": [2], "dilation": [2], "ceil_mode": True},
            {"kernel_size": [2], "stride": [3], "padding": [3, 2]},  # windows in padding only
            # every parameter a distinct (H, W) pair
            {
                "kernel_size": [3, 2],
                "stride": [1, 2],
                "padding": [1, 0],
                "dilation": [2, 1],
                "ceil_mode": True,
            },
        ],
    },
    "conv2d": {
        "shapes": [
            ((2, 4, 7, 8), (6, 4, 3, 3), (6,)),
            ((1, 4, 5, 5), (6, 2, 3, 3), None),
            ((0, 4, 5, 5), (2, 4, 1, 1), (2,)),
        ],
        "attrs": [
            {},
            {"stride": [2], "padding": [1]},
            {"dilation": [2]},
            {"groups": 2, "padding": [1, 0]},
            {"stride": [2, 1], "padding": [0, 2], "dilation": [1, 2]},  # distinct (H, W) pairs
        ],
    },
    "conv_transpose2d": {
        "shapes": [((2, 4, 5, 6), (4, 3, 3, 3), (3,)), ((1, 4, 4, 4), (4, 2, 3, 3), None)],
        "attrs": [
            {},
            {"stride": [2], "padding": [1], "output_padding": [1]},
            {"groups": 2, "dilation": [2]},
            {"stride": [1, 2], "padding": [1, 0], "output_padding": [0, 1], "dilation": [2, 1]},
        ],
    },
    "conv2d_backward_input": {
        "shapes": [
            ((2, 6, 5, 6), (2, 4, 7, 8), (6, 4, 3, 3)),
            ((2, 6, 4, 4), (2, 4, 7, 8), (6, 4, 3, 3)),
            ((2, 6, 3, 4), (2, 4, 7, 8), (6, 4, 3, 3)),
            ((1, 6, 5, 3), (1, 4, 5, 5), (6, 2, 3, 3)),
            ((0, 2, 3, 3), (0, 4, 5, 5), (2, 4, 3, 3)),
            ((2, 6, 3, 8), (2, 4, 7, 8), (6, 4, 3, 3)),
            ((1, 6, 5, 2), (1, 4, 5, 5), (6, 2, 3, 3)),
        ],
        "attrs": [
            {},
            {"stride": [2], "padding": [1]},
            {"dilation": [2]},
            {"groups": 2, "padding": [1, 0]},
            # every parameter a distinct (H, W) pair, as conv2d's cases
            {"stride": [2, 1], "padding": [0, 2], "dilation": [1, 2]},
            {"groups": 2, "stride": [1, 2], "padding": [2, 0], "dilation": [2, 1]},
        ],
        "edges": False,
    },
    "conv_transpose2d_backward_input": {
        "shapes": [
            ((2, 3, 7, 8), (2, 4, 5, 6), (4, 3, 3, 3)),
            ((2, 3, 10, 12), (2, 4, 5, 6), (4, 3, 3, 3)),
            ((1, 4, 8, 8), (1, 4, 4, 4), (4, 2, 3, 3)),
            ((2, 3, 7, 14), (2, 4, 5, 6), (4, 3, 3, 3)),
            ((2, 3, 12, 6), (2, 4, 5, 6), (4, 3, 3, 3)),
            ((1, 4, 10, 4), (1, 4, 4, 4), (4, 2, 3, 3)),
        ],
        "attrs": [
            {},
            {"stride": [2], "padding": [1], "output_padding": [1]},
            {"groups": 2, "dilation": [2]},
            # every parameter a distinct (H, W) pair, as conv_transpose2d's cases
            {"stride": [1, 2], "padding": [1, 0], "output_padding": [0, 1], "dilation": [2, 1]},
            {"stride": [2, 1], "padding": [0, 1], "output_padding": [1, 0]},
            {"groups": 2, "stride": [2, 1], "padding": [0, 1], "output_padding": [1, 0]},
        ],
        "edges": False,
    },
    # attrs: the forward's (below)
    "max_pool2d_backward": {"shapes": POOL_BACKWARD_SHAPES},
    "avg_pool2d_backward": {"shapes": POOL_BACKWARD_SHAPES},
    "adaptive_avg_pool2d_backward": {
        "shapes": [
            ((2, 3, 4, 4), (2, 3, 7, 8)),
            ((2, 3, 3, 2), (2, 3, 7, 8)),
            ((1, 2, 1, 1), (1, 2, 5, 5)),
            ((0, 2, 4, 4), (0, 2, 4, 4)),
            ((2, 3, 5, 7), (2, 3, 7, 8)),  # windows overlapping
            ((1, 2, 2, 4), (1, 2, 5, 5)),
        ],
    },
    "interpolate_backward": {
        "shapes": [
            ((1, 2, 10, 12), (1, 2, 5, 6)),
            ((1, 2, 3, 4), (1, 2, 5, 6)),
            ((1, 2, 7, 5), (1, 2, 5, 6)),
            ((2, 1, 6, 6), (2, 1, 3, 3)),
            ((1, 2, 7, 9), (1, 2, 5, 6)),
            ((2, 1, 4, 4), (2, 1, 3, 3)),
            # grad_out of the (H, W)-pair attribute sets, as interpolate's cases
            ((1, 2, 4, 9), (1, 2, 5, 6)),
            ((2, 1, 4, 9), (2, 1, 3, 3)),
            ((1, 2, 8, 3), (1, 2, 5, 6)),
            ((2, 1, 5, 1), (2, 1, 3, 3)),
            ((1, 2, 15, 6), (1, 2, 5, 6)),
            ((2, 1, 9, 3), (2, 1, 3, 3)),
        ],
        # attrs: interpolate's (below)
    },
    "batch_norm": {
        "shapes": [((2, 3, 4, 5), (3,), (3,), (3,), (3,)), ((4, 3), (3,), (3,), None, None)],
        "attrs": [{}, {"eps": 0.1}],
        "domains": {2: "positive"},
        "edges": False,
    },
    "group_norm": {
        "shapes": [((2, 6, 4, 4), (6,), (6,)), ((3, 4, 5), None, None)],
        "attrs": [{"num_groups": 3}, {"num_groups": 2, "eps": 0.01}],
        "edges": False,
    },
    "layer_norm": {
        "shapes": [((2, 3, 8), (8,), (8,)), ((2, 3, 8), (3, 8), None), ((4, 5), None, None)],
        "attrs": [
            {"normalized_shape": [8]},
            {"normalized_shape": [3, 8]},
            {"normalized_shape": [5]},
        ],
        "edges": False,
    },
    "rms_norm": {
        "shapes": [((2, 3, 8), (8,)), ((4, 5), None)],
        "attrs": [{"normalized_shape": [8]}, {"normalized_shape": [5], "eps": 1e-5}],
        "edges": False,
    },
    "rotary_embedding": {
        # (x, cos, sin, position_ids): full and partial rotary (rot_dim < dim), positions from
        # the seq axis or given (broadcast over heads; a packed (tokens, heads, dim) layout)
        "shapes": [
            ((2, 3, 5, 8), (8, 4), (8, 4), None),
            ((2, 3, 5, 8), (8, 3), (8, 3), (2, 1, 5)),
            ((4, 6), (8, 2), (8, 2), None),
            ((3, 2, 6), (8, 3), (8, 3), (3, 1)),
            ((0, 5, 4), (8, 2), (8, 2), None),
        ],
        "attrs": [{}, {"interleaved": True}],
        "domains": {3: ("index", 0, 8)},
        "edges": False,
    },
    # ---------------------------------------------------------------- their backward ops
    "softmax_backward": {
        "shapes": [((3, 5), (3, 5)), ((2, 3, 4), (2, 3, 4)), ((0, 4), (0, 4))],
        "attrs": [{}, {"axis": 0}, {"axis": 1}],
        "domains": {1: "positive"},
        "edges": False,
    },
    "log_softmax_backward": {
        "shapes": [((3, 5), (3, 5)), ((2, 3, 4), (2, 3, 4)), ((0, 4), (0, 4))],
        "attrs": [{}, {"axis": 0}, {"axis": 1}],
        "domains": {1: ("range", -4.0, -0.01)},
        "edges": False,
    },
    "layer_norm_backward": {
        "shapes": [
            ((2, 3, 8), (2, 3, 8), (8,)),
            ((2, 3, 8), (2, 3, 8), (3, 8)),
            ((4, 5), (4, 5), None),
        ],
        "attrs": [
            {"normalized_shape": [8]},
            {"normalized_shape": [3, 8]},
            {"normalized_shape": [5], "eps": 0.1},
        ],
        "edges": False,
    },
    "rms_norm_backward": {
        "shapes": [((2, 3, 8), (2, 3, 8), (8,)), ((4, 5), (4, 5), None)],
        "attrs": [{"normalized_shape": [8]}, {"normalized_shape": [5], "eps": 1e-5}],
        "edges": False,
    },
    "group_norm_backward": {
        "shapes": [((2, 6, 4, 4), (2, 6, 4, 4), (6,)), ((3, 4, 5), (3, 4, 5), None)],
        "attrs": [{"num_groups": 3}, {"num_groups": 2, "eps": 0.01}],
        "edges": False,
    },
    "batch_norm_backward": {
        "shapes": [
            ((2, 3, 4, 5), (2, 3, 4, 5), (3,), (3,), (3,)),
            ((4, 3), (4, 3), None, (3,), (3,)),
        ],
        "attrs": [{}, {"training": False, "eps": 0.1}],
        "domains": {4: "positive"},
        "edges": False,
    },
    "batch_norm_training": {
        "shapes": [((2, 3, 4, 5), (3,), (3,), (3,), (3,)), ((4, 3), None, None, None, None)],
        "attrs": [{}, {"momentum": 0.5, "eps": 0.1}],
        "domains": {2: "positive"},
        "edges": False,
    },
    # ---------------------------------------------------------------- attention
    "scaled_dot_product_attention": {
        "shapes": [
            ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), None),
            ((2, 4, 6, 4), (2, 2, 5, 4), (2, 2, 5, 3), None),
            ((3, 5, 4), (3, 6, 4), (3, 6, 4), (5, 6)),
            ((2, 2, 4, 3), (2, 2, 4, 3), (2, 2, 4, 3), (2, 1, 4, 4)),
            ((1, 2, 0, 4), (1, 2, 3, 4), (1, 2, 3, 4), None),
        ],
        "attrs": [
            {},
            {"is_causal": True},
            {"enable_gqa": True, "scale": 0.7},
            # the weights dropped out from the Philox stream, as the reference drops them
            {"dropout_p": 0.3, "seed": -5, "offset": 2**40 + 3, "enable_gqa": True},
        ],
        "domains": {0: "small", 1: "small", 2: "small", 3: "small"},
        "edges": False,
    },
    "scaled_dot_product_attention_backward": {
        "shapes": [
            ((2, 3, 5, 6), (2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), None, (2, 3, 5, 6), (2, 3, 5)),
            ((2, 4, 6, 3), (2, 4, 6, 4), (2, 2, 5, 4), (2, 2, 5, 3), None, (2, 4, 6, 3), (2, 4, 6)),
            ((3, 5, 4), (3, 5, 4), (3, 6, 4), (3, 6, 4), (5, 6), (3, 5, 4), (3, 5)),
            ((1, 2, 0, 4), (1, 2, 0, 4), (1, 2, 3, 4), (1, 2, 3, 4), None, (1, 2, 0, 4), (1, 2, 0)),
        ],
        "attrs": [
            {},
            {"is_causal": True},
            {"enable_gqa": True, "scale": 0.7},
            # the weights dropped out from the Philox stream, as the reference drops them
            {"dropout_p": 0.3, "seed": -5, "offset": 2**40 + 3, "enable_gqa": True},
        ],
        # logsumexp (input 6) near the scores' log-sum-exp: the weights stay moderate
        "domains": {
            0: "small",
            1: "small",
            2: "small",
            3: "small",
            4: "small",
            5: "small",
            6: ("range", 1.0, 3.0),
        },
        "edges": False,
    },
    "interpolate": {
        "shapes": [((1, 2, 5, 6),), ((2, 1, 3, 3),)],
        "attrs": [
            {"size": [10, 12]},
            {"size": [3, 4], "mode": "bilinear"},
            {"size": [7, 5], "mode": "bilinear", "align_corners": True},
            {"scale_factor": [2.0]},
            {"scale_factor": [1.5], "mode": "bilinear"},
            {"size": [4, 9]},  # nearest, shrinking one axis and growing the other
            {"scale_factor": [1.7, 0.6], "mode": "bilinear"},
            {"scale_factor": [3.0, 1.0], "mode": "bilinear", "align_corners": True},
        ],
    },
    # ------------------------------------------------------- random numbers and arange
    # No tensor inputs (one empty shape set); compared bit for bit with conformance/philox.py.
    "random_uniform": {
        "shapes": [()],
        "attrs": [
            lambda sig: {"shape": [3, 4], "dtype": sig[-1], "seed": 7},
            lambda sig: {"shape": [2, 0, 3], "dtype": sig[-1], "seed": 1},
            lambda sig: {"shape": [], "dtype": sig[-1], "seed": -1, "offset": -5},
            lambda sig: {
                "shape": [5, 3, 7],
                "dtype": sig[-1],
                "seed": 123456789012345,
                "offset": 9,
                "low": -2.5,
                "high": 7.0,
            },
            lambda sig: {"shape": [700], "dtype": sig[-1], "seed": 3, "low": 1.0, "high": 1.001},
        ],
    },
    "random_normal": {
        "shapes": [()],
        "attrs": [
            lambda sig: {"shape": [3, 4], "dtype": sig[-1], "seed": 7},
            lambda sig: {"shape": [0, 3], "dtype": sig[-1], "seed": 1},
            lambda sig: {"shape": [], "dtype": sig[-1], "seed": -1, "offset": -5},
            lambda sig: {
                "shape": [4, 5, 6],
                "dtype": sig[-1],
                "seed": 2**40 + 3,
                "offset": 2**33,
                "mean": -1.5,
                "std": 3.0,
            },
        ],
    },
    "random_bernoulli": {
        "shapes": [(None,), ((3, 4),), ((4,),), ((2, 1, 3),)],
        "attrs": [
            lambda sig: {"seed": 11, "dtype": sig[-1]},
            lambda sig: {"shape": [3, 4], "seed": 5, "dtype": sig[-1], "offset": 2},
            lambda sig: {"shape": [2, 3, 4], "seed": 5, "p": 0.25, "dtype": sig[-1]},
            lambda sig: {"shape": [2, 5, 3], "seed": -9, "dtype": sig[-1]},
            lambda sig: {"shape": [6], "seed": 5, "p": 1.0, "dtype": sig[-1]},
        ],
        "domains": {0: ("range", -0.25, 1.25)},
        "edges": False,
    },
    "dropout": {
        "shapes": [((3, 4),), ((2, 3, 5),), ((0, 3),), ((),), ((257,),)],
        "attrs": [
            {"seed": 3},
            {"seed": 9, "p": 0.2, "offset": 4},
            {"seed": 1, "p": 1.0},
            {"seed": 2, "p": 0.7, "training": False},
            {"seed": -5, "p": 0.0},
        ],
    },
    "dropout_backward": {
        "shapes": [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((0, 3), (0, 3)), ((), ())],
        "attrs": [{"p": 0.5}, {"p": 0.3, "training": False}, {"p": 1.0}, {"p": 0.1}],
    },
    "arange": {
        "shapes": [()],
        "attrs": [
            lambda sig: {"start": 0.5, "stop": 7.3, "step": 0.7, "dtype": sig[-1]},
            lambda sig: {"start": -5, "stop": 20, "step": 3, "dtype": sig[-1]},
            lambda sig: {"start": 10, "dtype": sig[-1]},
            lambda sig: {"start": 5, "stop": -6, "step": -2, "dtype": sig[-1]},
            lambda sig: {"start": 3, "stop": 1, "dtype": sig[-1]},
            lambda sig: {"start": 0.1, "stop": 1.0, "step": 0.1, "dtype": sig[-1]},
        ],
    },
}

# The pooling and interpolate backward ops run their forward's attribute sets (each set picks
# its grad_out shapes among the entry's shapes); avg_pool2d_backward one more, count_include_pad
# off with every parameter a distinct (H, W) pair.
OPS["max_pool2d_backward"]["attrs"] = OPS["max_pool2d"]["attrs"]
OPS["interpolate_backward"]["attrs"] = OPS["interpolate"]["attrs"]
OPS["avg_pool2d_backward"]["attrs"] = OPS["avg_pool2d"]["attrs"] + [
    {
        "kernel_size": [3, 2],
        "stride": [2, 1],
        "padding": [1, 0],
        "ceil_mode": True,
        "count_include_pad": False,
    },
]

# ---------------------------------------------------------------- losses
# Five classes throughout, so that ("index", 0, 5) targets are valid class indices; the
# probability targets (float signatures) take the same shapes as the logits. Infer drops the
# combinations that do not fit a signature.
_CLASS_LOSS_SHAPES = [
    ((4, 5), (4,), (5,)),
    ((4, 5), (4,), None),
    ((2, 5, 3), (2, 3), (5,)),
    ((3, 2, 5), (3, 2), None),
    ((5,), (), (5,)),
    ((0, 5), (0,), None),
    ((4, 5), (4, 5), (5,)),
    ((2, 5, 3), (2, 5, 3), None),
]
_CLASS_LOSS_ATTRS = [
    {},
    {"reduction": "sum"},
    {"reduction": "none"},
    {"ignore_index": 2},
    {"axis": -1, "reduction": "none", "ignore_index": 0},
    {"reduction": "mean", "label_smoothing": 0.2},
    {"axis": -1, "reduction": "sum", "label_smoothing": 0.1},
]
_NLL_ATTRS = [a for a in _CLASS_LOSS_ATTRS if "label_smoothing" not in a]


def _loss_grad_shapes(shapes: list) -> list:
    """(grad_out, *inputs) shapes: grad_out 0-d (reduced) or the samples' shape ("none")."""
    found = []
    for shape in shapes:
        x = shape[0]
        axis = 0 if len(x) == 1 else 1
        samples = tuple(e for k, e in enumerate(x) if k != axis)
        last = tuple(x[:-1])
        for g in [(), samples, last]:
            if (g, *shape) not in found:
                found.append((g, *shape))
    return found


def _broadcast(a: tuple, b: tuple) -> tuple:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(x if y == 1 else y for x, y in zip(a, b, strict=True))


_POINT_LOSS_ATTRS = [{}, {"reduction": "sum"}, {"reduction": "none"}]
_PAIR_LOSS_SHAPES = [
    ((3, 4), (3, 4)),
    ((2, 3, 4), (4,)),
    ((3, 1), (1, 4)),
    ((0, 3), (0, 3)),
    ((), ()),
]
_BCE_SHAPES = [
    ((3, 4), (3, 4), (3, 4), (4,)),
    ((3, 4), (3, 4), None, None),
    ((2, 3, 4), (2, 3, 4), (3, 1), None),
    ((0, 4), (0, 4), None, (4,)),
]
OPS.update(
    {
        "cross_entropy": {
            "shapes": _CLASS_LOSS_SHAPES,
            "attrs": _CLASS_LOSS_ATTRS,
            "domains": {1: ("index", 0, 5), 2: "positive"},
            "edges": False,
        },
        "nll_loss": {
            "shapes": _CLASS_LOSS_SHAPES,
            "attrs": _NLL_ATTRS,
            "domains": {1: ("index", 0, 5), 2: "positive"},
            "edges": False,
        },
        "cross_entropy_backward": {
            "shapes": _loss_grad_shapes(_CLASS_LOSS_SHAPES),
            "attrs": _CLASS_LOSS_ATTRS,
            "domains": {0: "small", 1: "small", 2: ("index", 0, 5), 3: "positive"},
            "edges": False,
        },
        "nll_loss_backward": {
            "shapes": _loss_grad_shapes(_CLASS_LOSS_SHAPES),
            "attrs": _NLL_ATTRS,
            "domains": {0: "small", 2: ("index", 0, 5), 3: "positive"},
            "edges": False,
        },
        "binary_cross_entropy_with_logits": {
            "shapes": _BCE_SHAPES,
            "attrs": _POINT_LOSS_ATTRS,
            "domains": {0: "small", 1: ("range", 0.0, 1.0), 2: "positive", 3: "positive"},
            "edges": False,
        },
        "binary_cross_entropy_with_logits_backward": {
            "shapes": [(g, *s) for s in _BCE_SHAPES for g in [(), s[0]]],
            "attrs": _POINT_LOSS_ATTRS,
            "domains": {
                0: "small",
                1: "small",
                2: ("range", 0.0, 1.0),
                3: "positive",
                4: "positive",
            },
            "edges": False,
        },
        "mse_loss": {
            "shapes": _PAIR_LOSS_SHAPES,
            "attrs": _POINT_LOSS_ATTRS,
            "domains": {0: "small", 1: "small"},
            "edges": False,
        },
        "smooth_l1_loss": {
            "shapes": _PAIR_LOSS_SHAPES,
            "attrs": _POINT_LOSS_ATTRS + [{"beta": 0.0}, {"beta": 0.5, "reduction": "none"}],
            "domains": {0: "small", 1: "small"},
            "edges": False,
        },
    }
)
for _name in ["mse_loss_backward", "smooth_l1_loss_backward"]:
    _forward = OPS[_name.removesuffix("_backward")]
    OPS[_name] = {
        "shapes": [(g, *s) for s in _PAIR_LOSS_SHAPES for g in [(), _broadcast(*s)]],
        "attrs": _forward["attrs"],
        "domains": {0: "small", 1: "small", 2: "small"},
        "edges": False,
    }

# ---------------------------------------------------------------- element-wise backward ops
# (capi/ops/elementwise_grad_table.h): cotangents and values of moderate size, without edge
# values: a backward formula chains several rounded operations in the kernel's compute type, so
# an infinity or a huge value overflows an intermediate result that the float64 reference
# keeps (the edge values of these ops are checked against torch in tests/test_grad_*).
_GRAD_PAIR_SHAPES = [((), ()), ((7,), (7,)), ((3, 4), (3, 4)), ((3, 4), (4,)), ((0, 3), (0, 3))]
_GRAD_TRIPLE_SHAPES = [
    ((3, 4), (3, 4), (3, 4)),
    ((3, 4), (3, 1), (4,)),
    ((2, 3), (), (2, 3)),
    ((0, 2), (0, 2), (2,)),
]
_GRAD_DOMAINS = {
    "log1p_backward": {1: ("range", -0.9, 3.0)},
    "log2_backward": {1: "positive"},
    "log10_backward": {1: "positive"},
    "acosh_backward": {1: ("range", 1.0, 3.0)},
    "pow_backward": {1: "positive", 2: "exponent"},
}
_GRAD_ATTRS = {
    "leaky_relu_backward": [{}, {"negative_slope": 0.2}],
    "elu_backward": [{}, {"alpha": 0.5}],
    "softplus_backward": [{}, {"beta": 2.0, "threshold": 1.0}],
    "gelu_backward": [{}, {"approximate": "tanh"}],
}
for _name in [
    "abs_backward",
    "relu_backward",
    "expm1_backward",
    "log1p_backward",
    "log2_backward",
    "log10_backward",
    "tan_backward",
    "asin_backward",
    "acos_backward",
    "atan_backward",
    "tanh_backward",
    "asinh_backward",
    "acosh_backward",
    "atanh_backward",
    "erf_backward",
    "sigmoid_backward",
    "silu_backward",
    "selu_backward",
    "hardswish_backward",
    "hardsigmoid_backward",
    "mish_backward",
    "leaky_relu_backward",
    "elu_backward",
    "softplus_backward",
    "gelu_backward",
    "where_backward",
]:
    OPS[_name] = {
        "shapes": _GRAD_PAIR_SHAPES,
        "domains": {0: "small", 1: "small", **_GRAD_DOMAINS.get(_name, {})},
        "edges": False,
    }
    if _name in _GRAD_ATTRS:
        OPS[_name]["attrs"] = _GRAD_ATTRS[_name]
for _name in [
    "maximum_backward",
    "minimum_backward",
    "pow_backward",
    "atan2_backward",
    "logaddexp_backward",
    "copysign_backward",
]:
    OPS[_name] = {
        "shapes": _GRAD_TRIPLE_SHAPES,
        "domains": {0: "small", 1: "small", 2: "small", **_GRAD_DOMAINS.get(_name, {})},
        "edges": False,
    }

# ---------------------------------------------------------------- shape and indexing backward ops
# (capi/ops/shape_grad_ops.c, capi/ops/index_ops.c; references in shape_grad_references.py):
# grad_out in the shape the forward gives for the listed forward inputs and attributes (infer
# drops the other pairings). Index inputs take negative indices where the forward allows them,
# and more indices than the axis has elements somewhere, so repeated indices add up.
_TAKE_SHAPES = [
    ((3, 4), (5, 4), (3,)),
    ((5, 3), (5, 4), (3,)),
    ((3,), (5, 4), (3,)),
    ((2, 2, 4), (5, 4), (2, 2)),
    ((5, 2, 2), (5, 4), (2, 2)),
    ((4,), (6,), (4,)),
    ((7, 4), (3, 4), (7,)),
    ((0, 4), (3, 4), (0,)),
]
# put_along_axis and scatter_nd: (grad_out, x, indices, values, out), out of x's shape.
_PUT_SHAPES = [(s[0], *s, s[0]) for s in OPS["put_along_axis"]["shapes"]]
_SCATTER_ND_SHAPES = [(s[0], *s, s[0]) for s in OPS["scatter_nd"]["shapes"]]
OPS.update(
    {
        "clip_backward": {
            "shapes": [
                ((3, 4), (3, 4), (3, 4), (3, 4)),
                ((3, 4), (3, 4), (4,), None),
                ((3, 4), (3, 4), None, (3, 1)),
                ((3, 4), (4,), (3, 1), ()),
                ((2, 3), (2, 3), (), ()),
                ((0, 2), (0, 2), (), (2,)),
                ((5,), (5,), None, None),
            ],
            "attrs": [{"wrt": "x"}, {"wrt": "min"}, {"wrt": "max"}],
            # few distinct values: x meets its bounds and min > max occurs
            "domains": {1: "ties", 2: "ties", 3: "ties"},
        },
        "tile_backward": {
            "shapes": [
                ((2, 6), (2, 3)),
                ((2, 2, 6), (2, 3)),
                ((8,), (4,)),
                ((2, 1, 8), (4,)),
                ((2,), ()),
                ((12, 5), (3, 1)),
            ],
            "attrs": [{"repetitions": [2]}, {"repetitions": [2, 1, 2]}, {"repetitions": [4, 5]}],
        },
        "repeat_backward": {
            "shapes": [
                ((24,), (3, 4)),
                ((10,), (5,)),
                ((2,), ()),
                ((3, 4), (3, 4)),
                ((3, 8), (3, 4)),
                ((36,), (3, 4)),
                ((3,), ()),
                ((2, 6), (2, 3)),
            ],
            "attrs": [
                {"repeats": [2]},
                {"repeats": [1, 0, 2], "axis": 0},
                {"repeats": [2], "axis": 1},
                {"repeats": [3], "axis": None},
                {"repeats": [2, 1, 3], "axis": -1},
            ],
        },
        "pad_backward": {
            "shapes": [
                ((5, 6), (3, 4)),
                ((6, 7), (3, 4)),
                ((4, 6), (3, 4)),
                ((4, 5), (3, 4)),
                ((7,), (5,)),
                ((8,), (5,)),
                ((6,), (5,)),
                ((10,), (5,)),
                ((4, 5, 4), (2, 3, 2)),
                ((5, 6, 5), (2, 3, 2)),
                ((3, 7), (3, 4)),  # one axis padded: the large case grows the other
            ],
            "attrs": [
                {"pad_width": [1]},
                {"pad_width": [1, 2]},
                {"pad_width": [0, 1, 2, 0], "mode": "reflect"},
                {"pad_width": [2, 1], "mode": "edge"},
                {"pad_width": [1, 0]},
                {"pad_width": [2, 3], "mode": "reflect"},
                {"pad_width": [0, 0, 1, 2], "mode": "reflect"},
            ],
        },
        "permute_dims_backward": {
            "shapes": [((4, 2, 3),), ((4, 3),), ((),), ((0, 2),)],
            "attrs": [{"axes": [2, 0, 1]}, {"axes": [1, 0]}, {"axes": []}, {"axes": [1, 2, 0]}],
        },
        "roll_backward": {
            "shapes": [((3, 4),), ((6,),), ((0, 2),)],
            "attrs": OPS["roll"]["attrs"] + [{"shift": [-8]}, {"shift": [3, -1], "axis": [-1, 0]}],
        },
        "slice_backward": {
            "shapes": [
                ((3, 6), (5, 6)),
                ((3,), (7,)),
                ((0, 3), (0, 3)),
                ((4, 6), (5, 6)),
                ((4,), (7,)),
                ((3, 3), (5, 6)),
                ((0, 1), (0, 3)),
                ((2, 6), (5, 6)),
                ((2,), (7,)),
            ],
            "attrs": OPS["slice"]["attrs"],
        },
        "concat_backward": {
            "shapes": [
                ((6, 3), [(2, 3), (4, 3)]),
                ((2, 4), [(2, 3), (2, 1)]),
                ((10,), [(2, 3), (4,)]),
                ((3, 3), [(0, 3), (2, 3), (1, 3)]),
            ],
            "attrs": OPS["concat"]["attrs"],
        },
        "stack_backward": {
            "shapes": [
                ((3, 2, 3), [(2, 3), (2, 3), (2, 3)]),
                ((2, 3, 3), [(2, 3), (2, 3), (2, 3)]),
                ((2,), [(), ()]),
                ((2, 0, 2), [(0, 2), (0, 2)]),
                ((0, 2, 2), [(0, 2), (0, 2)]),
            ],
            "attrs": OPS["stack"]["attrs"],
        },
        "take_backward": {
            "shapes": _TAKE_SHAPES,
            "attrs": [{"axis": 0}, {"axis": 1}, {"axis": None}, {"axis": -1}],
            "domains": {2: ("index_of", 1)},
        },
        "take_along_axis_backward": {
            "shapes": [
                ((4, 3), (4, 5), (4, 3)),
                ((2, 5), (4, 5), (2, 5)),
                ((4,), (6,), (4,)),
                ((3, 2), (1, 5), (3, 2)),  # x broadcast along axis 0: summed over it
                ((2, 6), (4, 1), (2, 6)),
                ((4, 8), (4, 5), (4, 8)),
            ],
            "attrs": [{}, {"axis": 0}],
            "domains": {2: ("index_of", 1)},
        },
        "embedding_backward": {
            "shapes": [
                ((3, 4, 5), (3, 4), (10, 5)),
                ((6, 3), (6,), (7, 3)),
                ((2,), (), (4, 2)),
                ((20, 3), (20,), (4, 3)),
            ],
            "domains": {1: ("index_of", 2)},
        },
        "gather_nd_backward": {
            "shapes": [
                ((5, 3), (4, 4, 3), (5, 2)),
                ((2, 3, 4), (4, 4), (2, 3, 1)),
                ((2, 5, 3), (2, 4, 3), (2, 5, 1)),
                ((2, 5, 4, 3), (2, 4, 3), (2, 5, 1)),
                ((0,), (4, 4), (0, 2)),
                ((12,), (3, 3), (12, 2)),
            ],
            "attrs": [{}, {"batch_dims": 1}],
            "domains": {2: ("index_of", 1)},
        },
        "index_select_backward": {
            "shapes": [
                ((3, 4), (5, 4), (3,)),
                ((5, 3), (5, 4), (3,)),
                ((1, 4), (5, 4), ()),
                ((5, 1), (5, 4), ()),
                ((6, 4, 2), (3, 4, 2), (6,)),
                ((3, 4, 6), (3, 4, 2), (6,)),
                ((0, 4), (5, 4), (0,)),
            ],
            "attrs": [{"axis": 0}, {"axis": 1}, {"axis": -1}],
            "domains": {2: ("index_of", 1)},
        },
        "index_add_backward": {
            "shapes": [(s[0], *s) for s in OPS["index_add"]["shapes"]],
            "attrs": OPS["index_add"]["attrs"] + [{"axis": 0, "alpha": -0.5}],
            "domains": {2: ("index_of", 1)},
        },
        # x and values with few distinct values (zeros and ties among the candidates of max,
        # min and multiply); out is the forward's result on them (cases.build's `derived`).
        "put_along_axis_backward": {
            "shapes": _PUT_SHAPES,
            "attrs": OPS["put_along_axis"]["attrs"],
            "domains": {0: "small", 1: "ties", 2: ("index_of", 1), 3: "ties"},
            "derived": {4: ("put_along_axis", (1, 2, 3))},
            "edges": False,
        },
        "scatter_nd_backward": {
            "shapes": _SCATTER_ND_SHAPES,
            "attrs": OPS["scatter_nd"]["attrs"],
            "domains": {0: "small", 1: "ties", 2: ("index_of", 1), 3: "ties"},
            "derived": {4: ("scatter_nd", (1, 2, 3))},
            "edges": False,
        },
    }
)

# The scatter-add backward ops (take, take_along_axis, index_select, gather_nd, embedding) keep
# the broadcast layout on their index inputs: in a large case thousands of cotangents then land
# on one element, a long lane of sums checked against tolerances.accumulation_bound. The
# scatters with a reduction do not: under multiply a long lane of products overflows or
# vanishes, and their gradients divide by it.
for _name in ["put_along_axis_backward", "scatter_nd_backward"]:
    OPS[_name]["no_broadcast"] = (2,)

#: Value domains of gradient checks (cases.gradient_cases), where the default (uniform in
#: [-2, 2]) leaves the function's domain or sits on a kink: {op: {input index: domain}}.
GRADIENT_DOMAINS: dict[str, dict] = {
    "acos": {0: ("range", -0.9, 0.9)},
    "asin": {0: ("range", -0.9, 0.9)},
    "atanh": {0: ("range", -0.9, 0.9)},
    "acosh": {0: ("range", 1.1, 3.0)},
    "log": {0: "positive"},
    "log2": {0: "positive"},
    "log10": {0: "positive"},
    "log1p": {0: ("range", -0.5, 3.0)},
    "sqrt": {0: "positive"},
    "pow": {0: "positive", 1: "small"},
    "reciprocal": {0: "positive"},
    "divide": {1: "positive"},
}
# conv2d's two backward operators take the same operands.
OPS["conv2d_backward_weight"] = OPS["conv2d_backward_input"]

# Normalisations: x (forward input 0, backward input 1) never constant along an axis.
for _name in ["batch_norm", "group_norm", "layer_norm", "rms_norm", "batch_norm_training"]:
    OPS[_name]["no_broadcast"] = (0,)
for _name in [
    "batch_norm_backward",
    "group_norm_backward",
    "layer_norm_backward",
    "rms_norm_backward",
]:
    OPS[_name]["no_broadcast"] = (1,)
