"""L-BFGS (torch.optim.LBFGS) with torch's optional strong-Wolfe line search.

The flat gradient, search direction and curvature history are numpy vectors while a step runs;
between steps `state` holds them as tensors under torch's names (d, t, old_dirs, old_stps, ro,
H_diag, prev_flat_grad, prev_loss, al, func_evals, n_iter), so state dicts move between torch and
scriptc. Scalars stay numpy scalars of the parameters' dtype, rounding as torch's 0-d tensors do.
"""

from __future__ import annotations

import numpy as np

from scriptc.autograd import enable_grad, no_grad
from scriptc.tensors import Tensor, wrap

from . import arith
from .optimizer import Optimizer, check_lr, scalar_value

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    """Limited-memory BFGS over all parameters as one flat vector; `step(closure)` runs up to
    `max_iter` iterations, calling `closure()` (which must zero the gradients, compute the loss,
    backpropagate and return the loss) up to `max_eval` times. Only one parameter group."""

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None):
        check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change, history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # --- the parameters as one flat vector ---------------------------------------------------------
    def _gather_flat_grad(self) -> np.ndarray:
        return np.concatenate([np.zeros(p.numel(), p._data.dtype) if p.grad is None else p.grad._data.reshape(-1)
                               for p in self._params])

    def _add_grad(self, step_size, update: np.ndarray) -> None:
        offset = 0
        for p in self._params:
            numel = p.numel()
            arith.add_(p._data, update[offset:offset + numel].reshape(p._data.shape), step_size)
            p._vc[0] += 1
            offset += numel

    def _set_param(self, values: list[np.ndarray]) -> None:
        for p, value in zip(self._params, values):
            p._data[...] = value
            p._vc[0] += 1

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # --- the step ----------------------------------------------------------------------------------
    def step(self, closure):
        """Run L-BFGS iterations; returns the loss `closure()` gave before the first of them."""
        if closure is None:
            raise RuntimeError("LBFGS.step() requires a closure that re-evaluates the model and returns the loss")
        with no_grad():
            return self._step(_with_grad(closure))

    def _step(self, closure):
        group = self.param_groups[0]
        lr = scalar_value(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        d, t = _arrays(state.get("d")), _arrays(state.get("t"))
        old_dirs, old_stps, ro = _arrays(state.get("old_dirs")), _arrays(state.get("old_stps")), _arrays(state.get("ro"))
        H_diag, prev_flat_grad = _arrays(state.get("H_diag")), _arrays(state.get("prev_flat_grad"))
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                d = self._two_loop_direction(state, flat_grad, old_dirs, old_stps, ro, H_diag, history_size)
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p._data.copy() for p in self._params]

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                                 max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break

        state.update(d=_tensors(d), t=_tensors(t), old_dirs=_tensors(old_dirs), old_stps=_tensors(old_stps),
                     ro=_tensors(ro), H_diag=_tensors(H_diag), prev_flat_grad=_tensors(prev_flat_grad),
                     prev_loss=prev_loss)
        return orig_loss

    def _two_loop_direction(self, state, flat_grad, old_dirs, old_stps, ro, H_diag, history_size) -> np.ndarray:
        """The L-BFGS two-loop recursion: an approximation of -H^-1 g from the curvature history."""
        if "al" not in state:
            state["al"] = [None] * history_size
        al = state["al"]
        q = -flat_grad
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            arith.add_(q, old_dirs[i], -al[i])
        r = q * H_diag
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            arith.add_(r, old_stps[i], _array(al[i]) - be_i)
        state["al"] = [None if a is None else wrap(np.asarray(_array(a))) for a in al]
        return r


def _with_grad(closure):
    def evaluate():
        with enable_grad():
            return closure()
    return evaluate


def _array(value):
    return value._data if isinstance(value, Tensor) else value


def _arrays(value):
    """A state value as numpy: tensors unwrapped, lists of them too."""
    if isinstance(value, list):
        return [_array(v) for v in value]
    return _array(value)


def _tensors(value):
    """A state value as torch keeps it: arrays and numpy scalars wrapped as tensors."""
    if isinstance(value, list):
        return [_tensors(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return wrap(np.asarray(value))
    return value


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to bounds."""
    xmin_bound, xmax_bound = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step length t along d meeting the strong Wolfe conditions: bracket, then zoom (torch's search).
    Returns (loss, flat gradient, t, function evaluations)."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)

    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket_gtd: list = []
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f, bracket_g = [t_prev, t], [f_prev, f_new], [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f, bracket_g = [t_prev, t], [f_prev, f_new], [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        previous_t = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = previous_t, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket until a point satisfies the conditions or it cannot shrink further
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # a point too close to the bracket's ends makes little progress: move it inside
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals
