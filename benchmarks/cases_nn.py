"""Neural-network and data-movement cases: softmax, layer_norm, their backward ops, max_pool2d,
transpose copy, argmax, embedding backward, cross_entropy and its backward (bytes read + written
per call, against torch CPU), with ctensor on the OpenCL device (``ctensor.opencl``) beside them
when that backend is loaded."""

from __future__ import annotations

import numpy as np

from .case import OUT_NAMES, Case, Impl, Target
from .env import Env

__all__ = ["build"]

_F32 = 4


def _faster(ratio: float) -> list[Target]:
    return [Target(f">= {ratio}x torch", "speedup", "torch", ratio)]


def build(env: Env) -> list[Case]:
    quick = env.quick
    rows, cols = (64, 256) if quick else (4096, 1024)
    x = env.normal((rows, cols))
    y = np.empty_like(x)
    w, b = env.normal((cols,)), env.normal((cols,))
    # backward ops: a cotangent, the forwards' outputs and the gradients' buffers
    gy = env.normal((rows, cols))
    y_sm = env.ops.softmax(x, axis=-1)
    y_lsm = env.ops.log_softmax(x, axis=-1)
    gw, gb = np.empty_like(w), np.empty_like(b)
    pool_in = env.normal((1, 8, 16, 16) if quick else (8, 64, 56, 56))
    pool_out = np.empty(
        pool_in.shape[:2] + (pool_in.shape[2] // 2, pool_in.shape[3] // 2), np.float32
    )
    pool_grad = env.normal(pool_out.shape)
    pool_grad_in = np.empty_like(pool_in)
    side = 128 if quick else 4096
    table_rows, table_dim, lookups = (1000, 64, 256) if quick else (50000, 512, 16384)
    emb_idx = env.rng.integers(0, table_rows, lookups).astype(np.int64)
    emb_grad = env.normal((lookups, table_dim))
    emb_table = np.empty((table_rows, table_dim), np.float32)
    emb_out = np.empty_like(emb_table)
    sq = env.normal((side, side))
    sq_t = np.empty_like(sq)
    # attention: (batch, heads, sequence, head dim), no mask, not causal
    att_shape = (1, 2, 256, 64) if quick else (1, 8, 4096, 64)
    aq, ak, av, ag = (env.normal(att_shape) for _ in range(4))
    ao, alse = env.ops.scaled_dot_product_attention(aq, ak, av)
    ao_buf, alse_buf = np.empty_like(ao), np.empty_like(alse)
    agq, agk, agv = (np.empty_like(aq) for _ in range(3))
    ns = {
        "ops": env.ops,
        "np": np,
        "x": x,
        "y": y,
        "w": w,
        "b": b,
        "p": pool_in,
        "po": pool_out,
        "pg": pool_grad,
        "pgi": pool_grad_in,
        "sq": sq,
        "sqt": sq_t,
        "cols": cols,
        "eg": emb_grad,
        "ei": emb_idx,
        "ew": emb_table,
        "egw": emb_out,
        "rows_e": table_rows,
        "gy": gy,
        "y_sm": y_sm,
        "y_lsm": y_lsm,
        "gw": gw,
        "gb": gb,
        "aq": aq,
        "ak": ak,
        "av": av,
        "ag": ag,
        "ao": ao,
        "alse": alse,
        "ao_buf": ao_buf,
        "alse_buf": alse_buf,
        "agq": agq,
        "agk": agk,
        "agv": agv,
    }
    has_torch = env.torch is not None
    if has_torch:
        torch = env.torch
        ns.update(
            torch=torch,
            F=torch.nn.functional,
            tx=env.t(x),
            ty=env.t(y),
            tw=env.t(w),
            tb=env.t(b),
            tp=env.t(pool_in),
            tpg=env.t(pool_grad),
            tpi=torch.ops.aten.max_pool2d_with_indices(env.t(pool_in), [2, 2], [2, 2])[1],
            tsq=env.t(sq),
            tsqt=env.t(sq_t),
            teg=env.t(emb_grad),
            tei=torch.from_numpy(emb_idx),
            emb_backward=torch.ops.aten.embedding_dense_backward,
            tgy=env.t(gy),
            ty_sm=env.t(y_sm),
            ty_lsm=env.t(y_lsm),
        )
        # torch's layer_norm backward takes the forward's saved mean and rstd
        _, tmean, trstd = torch.native_layer_norm(ns["tx"], (cols,), ns["tw"], ns["tb"], 1e-5)
        ns.update(tmean=tmean, trstd=trstd)
        ns.update(
            taq=env.t(aq),
            tak=env.t(ak),
            tav=env.t(av),
            tag=env.t(ag),
            tao=env.t(ao),
            talse=env.t(alse),
            sdpa_backward=torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward,
        )
    if env.jnp is not None:
        jax_nn = __import__("jax").nn
        ns.update(jsoftmax=env.jit(lambda v: jax_nn.softmax(v, axis=-1)), jx=env.j(x))
        # jax.nn.dot_product_attention takes (batch, sequence, heads, head dim)
        ns.update(
            jsdpa=env.jit(jax_nn.dot_product_attention),
            **{
                f"j{n}": env.j(np.ascontiguousarray(a.transpose(0, 2, 1, 3)))
                for n, a in (("aq", aq), ("ak", ak), ("av", av))
            },
        )
    env.opencl_arrays(
        ns, {"dy": y, "dpo": pool_out, "dsqt": sq_t}, dx=x, dw=w, db=b, dp=pool_in, dsq=sq
    )
    cl = env.opencl_expr

    def impls(
        ct: str,
        torch_expr: str | None,
        numpy: str | None = None,
        jax: str | None = None,
        opencl: str | None = None,
    ) -> dict[str, Impl]:
        found = {"ctensor": Impl(ct, ns)}
        if opencl:
            found["ctensor.opencl"] = Impl(opencl, ns)
        if numpy:
            found["numpy"] = Impl(numpy, ns)
        if torch_expr and has_torch:
            found["torch"] = Impl(torch_expr, ns)
        if jax and env.jnp is not None:
            found["jax"] = Impl(jax, ns)
        return found

    close = {"torch": (1e-5, 1e-6)} if has_torch else {}
    exact_np = {"numpy": "exact", **({"torch": "exact"} if has_torch else {})}
    shape_text = f"({rows}, {cols})"
    att_text = ", ".join(map(str, att_shape))
    att_flops = 4.0 * np.prod(att_shape[:-1]) * att_shape[-2] * att_shape[-1]
    return [
        Case(
            "nn/sdpa/" + "x".join(map(str, att_shape)),
            "nn",
            "GFLOP/s",
            att_flops,
            impls(
                "ops.scaled_dot_product_attention(aq, ak, av, out=(ao_buf, alse_buf))[0]",
                "F.scaled_dot_product_attention(taq, tak, tav)",
                jax="jsdpa(jaq, jak, jav)",
            ),
            f"scaled_dot_product_attention of float32 ({att_text}) query, key and value, no "
            "mask, not causal (flops: the two products, 4 B H L^2 E)",
            {"torch": (1e-4, 1e-5)} if has_torch else {},
            targets=_faster(1.0) if has_torch else [],
            outputs=("ao_buf", "alse_buf"),
        ),
        Case(
            "nn/sdpa_backward/" + "x".join(map(str, att_shape)),
            "nn",
            "GFLOP/s",
            2.5 * att_flops,
            impls(
                "ops.scaled_dot_product_attention_backward(ag, aq, ak, av, None, ao, alse, "
                "out=(agq, agk, agv))",
                "sdpa_backward(tag, taq, tak, tav, tao, talse, 0.0, False)",
            ),
            f"grad_query, grad_key and grad_value of scaled_dot_product_attention on "
            f"({att_text}) from the forward's out and logsumexp (torch: its flash attention "
            "CPU backward, as autograd runs it; flops: the five products, 10 B H L^2 E)",
            {"torch": (1e-3, 1e-4)} if has_torch else {},
            targets=_faster(1.0) if has_torch else [],
            outputs=("agq", "agk", "agv"),
        ),
        Case(
            f"nn/softmax/{rows}x{cols}",
            "nn",
            "GB/s",
            2 * x.size * _F32,
            impls(
                "ops.softmax(x, axis=-1, out=y)",
                "torch.softmax(tx, dim=-1, out=ty)",
                jax="jsoftmax(jx)",
                opencl=cl("softmax", "ops.softmax(dx, axis=-1, out=dy)"),
            ),
            f"{shape_text}, last axis",
            close,
            targets=_faster(1.2) if has_torch else [],
        ),
        Case(
            f"nn/layer_norm/{rows}x{cols}",
            "nn",
            "GB/s",
            2 * x.size * _F32,
            impls(
                "ops.layer_norm(x, w, b, normalized_shape=[cols], out=y)",
                "F.layer_norm(tx, (cols,), tw, tb)",
                opencl=cl(
                    "layer_norm", "ops.layer_norm(dx, dw, db, normalized_shape=[cols], out=dy)"
                ),
            ),
            f"{shape_text} over the last axis, with weight and bias",
            {"torch": (1e-4, 1e-4)} if has_torch else {},
            targets=_faster(1.2) if has_torch else [],
        ),
        Case(
            f"nn/softmax_backward/{rows}x{cols}",
            "nn",
            "GB/s",
            3 * x.size * _F32,
            impls(
                "ops.softmax_backward(gy, y_sm, axis=-1, out=y)",
                "torch._softmax_backward_data(tgy, ty_sm, -1, torch.float32)",
            ),
            f"{shape_text}, last axis: grad_input from the cotangent and the forward's output",
            {"torch": (1e-5, 1e-6)} if has_torch else {},
            targets=_faster(1.2) if has_torch else [],
        ),
        Case(
            f"nn/log_softmax_backward/{rows}x{cols}",
            "nn",
            "GB/s",
            3 * x.size * _F32,
            impls(
                "ops.log_softmax_backward(gy, y_lsm, axis=-1, out=y)",
                "torch._log_softmax_backward_data(tgy, ty_lsm, -1, torch.float32)",
            ),
            f"{shape_text}, last axis: grad_input from the cotangent and the forward's output",
            {"torch": (1e-5, 1e-5)} if has_torch else {},
            targets=_faster(1.2) if has_torch else [],
        ),
        Case(
            f"nn/layer_norm_backward/{rows}x{cols}",
            "nn",
            "GB/s",
            3 * x.size * _F32,
            impls(
                "ops.layer_norm_backward(gy, x, w, normalized_shape=[cols], out=(y, gw, gb))",
                "torch.ops.aten.native_layer_norm_backward("
                "tgy, tx, (cols,), tmean, trstd, tw, tb, [True, True, True])",
            ),
            f"{shape_text} over the last axis: grad_input, grad_weight and grad_bias (torch: "
            "from the forward's saved mean and rstd; ctensor recomputes them)",
            {"torch": (1e-4, 1e-3)} if has_torch else {},
            targets=_faster(1.2) if has_torch else [],
            outputs=(*OUT_NAMES, "gw", "gb"),
        ),
        Case(
            "nn/max_pool2d/" + "x".join(map(str, pool_in.shape)),
            "nn",
            "GB/s",
            (pool_in.size + pool_out.size) * _F32,
            impls(
                "ops.max_pool2d(p, kernel_size=2, out=po)",
                "F.max_pool2d(tp, 2)",
                opencl=cl("max_pool2d", "ops.max_pool2d(dp, kernel_size=2, out=dpo)"),
            ),
            f"2x2, stride 2 on {pool_in.shape}",
            {"torch": "exact"} if has_torch else {},
            targets=_faster(2.0) if has_torch else [],
        ),
        Case(
            "nn/max_pool2d_backward/" + "x".join(map(str, pool_in.shape)),
            "nn",
            "GB/s",
            (2 * pool_in.size + pool_out.size) * _F32,
            impls(
                "ops.max_pool2d_backward(pg, p, kernel_size=2, out=pgi)",
                "torch.ops.aten.max_pool2d_with_indices_backward("
                "tpg, tp, [2, 2], [2, 2], [0, 0], [1, 1], False, tpi)",
            ),
            f"input cotangent of 2x2, stride 2 on {pool_in.shape} (torch given the forward's "
            "indices, as its autograd)",
            {"torch": "exact"} if has_torch else {},
            targets=_faster(2.0) if has_torch else [],
            outputs=("pgi",),
        ),
        Case(
            f"nn/transpose_copy/{side}x{side}",
            "nn",
            "GB/s",
            2 * sq.size * _F32,
            impls(
                "ops.matrix_transpose(sq, out=sqt)",
                "tsqt.copy_(tsq.T)",
                "(np.copyto(sqt, sq.T), sqt)[1]",
                opencl=cl("permute_dims", "ops.permute_dims(dsq, axes=[1, 0], out=dsqt)"),
            ),
            f"({side}, {side}) written transposed into a compact array (ctensor.opencl: "
            "permute_dims)",
            exact_np,
            targets=_faster(2.0) if has_torch else [],
        ),
        Case(
            f"nn/argmax/{rows}x{cols}",
            "nn",
            "GB/s",
            x.size * _F32,
            impls(
                "ops.argmax(x, axis=-1)",
                "torch.argmax(tx, dim=-1)",
                "np.argmax(x, axis=-1)",
                opencl=cl("argmax", "ops.argmax(dx, axis=-1)"),
            ),
            f"{shape_text}, last axis",
            exact_np,
            targets=_faster(2.0) if has_torch else [],
        ),
        Case(
            f"nn/embedding_backward/{table_rows}x{table_dim}/{lookups}",
            "nn",
            "GB/s",
            (emb_grad.size + emb_out.size) * _F32,
            impls(
                "ops.embedding_backward(eg, ei, ew, out=egw)",
                "emb_backward(teg, tei, rows_e, -1, False)",
            ),
            f"weight gradient of a ({table_rows}, {table_dim}) table from {lookups} random "
            "int64 indices (grad_out read, the whole table written)",
            {"torch": (1e-5, 1e-6)} if has_torch else {},
            targets=_faster(1.0) if has_torch else [],
        ),
    ] + _loss_cases(env)


def _loss_cases(env: Env) -> list[Case]:
    """cross_entropy with class-index targets and the mean, forward and backward, on a
    classifier's (8192 samples, 1000 classes) and a language model's (2048 tokens, 32000 words)
    logits. torch's forward is F.cross_entropy (log_softmax, then nll_loss); its backward is what
    its autograd runs, given the forward's saved log_softmax: nll_loss_backward, then
    _log_softmax_backward_data. ctensor's backward recomputes the log-sum-exp from the logits."""
    shapes = [(64, 100), (16, 3000)] if env.quick else [(8192, 1000), (2048, 32000)]
    has_torch = env.torch is not None
    cases = []
    for rows, classes in shapes:
        logits = env.normal((rows, classes))
        target = env.rng.integers(0, classes, rows).astype(np.int64)
        grad = np.empty_like(logits)
        grad_target = np.empty(rows, np.float32)  # zeros: class indices take no cotangent
        ns = {"ops": env.ops, "np": np, "x": logits, "t": target, "gx": grad, "gt": grad_target}
        if has_torch:
            torch = env.torch
            tx, tt = env.t(logits), torch.from_numpy(target)
            lsm = torch.log_softmax(tx, 1)
            ns.update(
                torch=torch,
                F=torch.nn.functional,
                tx=tx,
                tt=tt,
                lsm=lsm,
                g1=torch.tensor(1.0),
                tw=torch.tensor(float(rows)),
                nll_backward=torch.ops.aten.nll_loss_backward,
            )
        forward = {"ctensor": Impl("ops.cross_entropy(x, t)", ns)}
        backward = {
            "ctensor": Impl(
                "ops.cross_entropy_backward(np.float32(1.0), x, t, out=(gx, gt))[0]", ns
            )
        }
        if has_torch:
            forward["torch"] = Impl("F.cross_entropy(tx, tt)", ns)
            backward["torch"] = Impl(
                "torch._log_softmax_backward_data("
                "nll_backward(g1, lsm, tt, None, 1, -100, tw), lsm, 1, torch.float32)",
                ns,
            )
        text = f"({rows}, {classes}) float32 logits, int64 class targets, mean"
        cases += [
            Case(
                f"nn/cross_entropy/{rows}x{classes}",
                "nn",
                "GB/s",
                logits.size * _F32,
                forward,
                text,
                {"torch": (1e-5, 1e-5)} if has_torch else {},
                targets=_faster(1.5) if has_torch else [],
            ),
            Case(
                f"nn/cross_entropy_backward/{rows}x{classes}",
                "nn",
                "GB/s",
                2 * logits.size * _F32,
                backward,
                text + ": grad_logits (torch from the forward's saved log_softmax)",
                {"torch": (1e-5, 1e-7)} if has_torch else {},
                targets=_faster(1.0) if has_torch else [],
                outputs=("gx",),
            ),
        ]
    return cases
