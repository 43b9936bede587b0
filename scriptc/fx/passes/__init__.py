"""torch.fx.passes: graph passes over GraphModules (shape_prop)."""
