"""scriptc.utils: torch.utils' helpers (hooks, checkpoint, data)."""
