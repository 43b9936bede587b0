"""scriptc.nn.parallel: DataParallel and data_parallel, which run the module in this process (scriptc has one
CPU device, so there is nothing to scatter)."""

from .data_parallel import DataParallel, data_parallel  # noqa: F401
