"""torch.func's helpers for running many copies of a model as one batched function: stacking their
parameters and buffers (model ensembling under vmap), and batch norm without running statistics."""

from __future__ import annotations

from scriptc.tensors import Tensor


def stack_module_state(models) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """(params, buffers): each of the models' named parameters and buffers stacked along a new leading
    dim, for `vmap(lambda p, b, x: functional_call(base, (p, b), (x,)))(params, buffers, x)`.

    The models must be of one class and all in training or all in eval mode. A stacked parameter is a
    new leaf that requires grad (the models' own parameters get no gradient through it).
    """
    import scriptc

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named: list[dict], name: str) -> Tensor:
        tensors = [state[name] for state in named]
        wanting = [t.requires_grad for t in tensors]
        if any(wanting) and not all(wanting):
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        result = scriptc.stack(tensors)
        return result.detach().requires_grad_() if all(wanting) else result

    parameters = [dict(m.named_parameters()) for m in models]
    buffers = [dict(m.named_buffers()) for m in models]
    return ({name: stacked(parameters, name) for name in parameters[0]},
            {name: stacked(buffers, name) for name in buffers[0]})


def replace_all_batch_norm_modules_(root):
    """Make every batch norm in `root` normalize by the batch's own statistics in training and eval
    alike (running_mean / running_var dropped, track_running_stats off), as vmap over a model with
    batch norm needs; in place, returns root."""
    from scriptc.nn.batchnorm import _BatchNorm

    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
