"""Families of torch.nn.functional written as compositions of op-table ops; nn.functional re-exports them."""
