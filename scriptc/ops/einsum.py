"""einsum: PyTorch's equation language (letters, `...`, implicit output, size-1 broadcasting) on numpy's einsum."""

from __future__ import annotations

from dataclasses import dataclass

from scriptc.errors import ShapeError

from . import register
from .matrix import out_type, same_dtype
from .schema import OPAQUE

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@dataclass
class Plan:
    """An equation resolved against operand shapes: explicit letters only, broadcast dims squeezed."""

    inputs: list[str]           # per operand, its subscripts after squeezing
    output: str
    squeezed: list[tuple]       # per operand, its shape after squeezing
    out_shape: tuple

    def equation(self) -> str:
        return ",".join(self.inputs) + "->" + self.output


def _terms(equation: str):
    """(input terms, output term or None), each a list of letters and '...'; torch's errors for bad text."""
    lhs, arrow, rhs = equation.partition("->")
    offset = 0
    terms = []
    for text in lhs.split(","):
        terms.append(_subscripts(text, offset, output=False))
        offset += len(text) + 1
    return terms, (_subscripts(rhs, len(lhs) + 2, output=True) if arrow else None)


def _subscripts(text: str, offset: int, output: bool) -> list[str]:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == " ":
            i += 1
        elif ch == ".":
            if text[i:i + 3] != "..." or "..." in out:
                if output:
                    raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis (...)")
                raise RuntimeError("einsum(): found '.' for operand that is not part of any ellipsis (...)"
                                   if text[i:i + 3] != "..." else "einsum(): found more than one ellipsis ('...') "
                                   "for an operand")
            out.append("...")
            i += 3
        elif ch in _LETTERS:
            out.append(ch)
            i += 1
        else:
            raise RuntimeError(f"einsum(): invalid subscript given at index {offset + i} in the equation string, "
                               "subscripts must be in [a-zA-Z]")
    return out


def plan(equation: str, shapes: list[tuple]) -> Plan:
    """Check `equation` against the operand shapes and resolve it (PyTorch's rules and messages)."""
    if not shapes:
        raise RuntimeError("einsum(): must provide at least one operand")
    terms, output = _terms(equation)
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    used = {ch for term in terms for ch in term if ch != "..."} | {ch for ch in output or () if ch != "..."}
    spare = [ch for ch in _LETTERS if ch not in used]
    ellipsis_rank = 0
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        named = len(term) - term.count("...")
        if "..." in term:
            if named > len(shape):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) is more than the "
                                   f"number of dimensions ({len(shape)}) for operand {i}")
            ellipsis_rank = max(ellipsis_rank, len(shape) - named)
        elif named != len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({named}) does not match the "
                               f"number of dimensions ({len(shape)}) for operand {i} and no ellipsis was given")
    ellipsis_letters = spare[:ellipsis_rank]
    sizes: dict[str, int] = {}
    letters_of = []
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        letters = _expand(term, ellipsis_letters, len(shape))
        letters_of.append(letters)
        seen: dict[str, int] = {}
        for ch, size in zip(letters, shape):
            if ch in seen and seen[ch] != size:
                raise ShapeError(f"einsum(): subscript {ch} is repeated for operand {i} but the sizes don't match, "
                                 f"{size} != {seen[ch]}")
            seen[ch] = size
            known = sizes.get(ch)
            if known is None or known == 1:
                sizes[ch] = size
            elif size not in (1, known):
                if ch in ellipsis_letters:
                    dim = ellipsis_letters.index(ch)
                    raise ShapeError(f"einsum(): dimension {dim} covered by ellipsis in operand {i}has size {size} "
                                     f"which does not broadcast with previously seen ellipsis with size {known} "
                                     "for the respective dimension")
                raise ShapeError(f"einsum(): subscript {ch} has size {size} for operand {i} which does not "
                                 f"broadcast with previously seen size {known}")
    if output is None:
        counts: dict[str, int] = {}
        for term in terms:
            for ch in term:
                if ch != "...":
                    counts[ch] = counts.get(ch, 0) + 1
        out_letters = ellipsis_letters + sorted((ch for ch, n in counts.items() if n == 1), key=_LETTERS.index)
    else:
        for ch in output:
            if ch != "..." and output.count(ch) > 1:
                raise RuntimeError(f"einsum(): output subscript {ch} appears more than once in the output")
            if ch != "..." and ch not in sizes:
                raise RuntimeError(f"einsum(): output subscript {ch} does not appear in the equation for any input "
                                   "operand")
        out_letters = _expand(output, ellipsis_letters, len(output) - output.count("...") + ellipsis_rank)
    inputs, squeezed = [], []
    for letters, shape in zip(letters_of, shapes):
        keep = [k for k, (ch, size) in enumerate(zip(letters, shape)) if not (size == 1 and sizes[ch] != 1)]
        inputs.append("".join(letters[k] for k in keep))
        squeezed.append(tuple(shape[k] for k in keep))
    return Plan(inputs, "".join(out_letters), squeezed, tuple(sizes[ch] for ch in out_letters))


def _expand(term: list[str], ellipsis_letters: list[str], rank: int) -> list[str]:
    """The term's letters with '...' replaced by the last of the ellipsis letters it covers."""
    if "..." not in term:
        return list(term)
    at = term.index("...")
    covered = rank - (len(term) - 1)
    return term[:at] + (ellipsis_letters[len(ellipsis_letters) - covered:] if covered else []) + term[at + 1:]


def _einsum_kernel(xp, equation, tensors):
    for t in tensors[1:]:
        same_dtype("expected scalar type {} but found {}", tensors[0], t)
    p = plan(equation, [t.shape for t in tensors])
    operands = [t.reshape(s) for t, s in zip(tensors, p.squeezed)]
    return xp.asarray(xp.einsum(p.equation(), *operands, optimize=len(operands) > 2))


def _einsum_grad(ctx, g):
    xp, tensors = ctx.xp, ctx.tensors
    p = plan(ctx.equation, [t.shape for t in tensors])
    operands = [t.reshape(s) for t, s in zip(tensors, p.squeezed)]
    grads = []
    for k, (subs, shape) in enumerate(zip(p.inputs, p.squeezed)):
        unique = "".join(dict.fromkeys(subs))
        others = [(s, o) for j, (s, o) in enumerate(zip(p.inputs, operands)) if j != k]
        available = set(p.output) | {ch for s, _ in others for ch in s}
        reachable = "".join(ch for ch in unique if ch in available)
        equation = ",".join([p.output] + [s for s, _ in others]) + "->" + reachable
        partial = xp.einsum(equation, g, *[o for _, o in others], optimize=len(others) > 1)
        # Letters only this operand sums over: its gradient is constant along them.
        sizes = {ch: size for ch, size in zip(subs, shape)}
        for axis, ch in enumerate(unique):
            if ch not in available:
                partial = xp.expand_dims(partial, axis)
        partial = xp.broadcast_to(partial, tuple(sizes[ch] for ch in unique))
        if len(unique) != len(subs):
            full = xp.zeros(shape, dtype=g.dtype)
            xp.einsum(subs + "->" + unique, full)[...] = partial  # a writeable view of the diagonal
            partial = full
        grads.append(partial.reshape(tensors[k].shape))
    return None, grads


def _einsum_rule(equation, tensors):
    if not isinstance(equation, str) or any(t.shape is None or not all(isinstance(d, int) for d in t.shape)
                                            for t in tensors):
        return out_type(tensors[0], None)
    return out_type(tensors[0], plan(equation, [tuple(t.shape) for t in tensors]).out_shape)


register("einsum(equation: str, tensors: Tensor[]) -> Tensor", OPAQUE, _einsum_kernel, shape=_einsum_rule,
         grad=_einsum_grad, method=False,
         doc="Sums products of the operands' elements over the indices the equation names (PyTorch's einsum).")
