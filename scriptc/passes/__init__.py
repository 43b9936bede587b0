"""scriptc.passes: graph-to-graph passes, one per module, run in order by pipeline.optimize."""

from .pipeline import PIPELINE, PassContext, PassRecord, optimize  # noqa: F401
