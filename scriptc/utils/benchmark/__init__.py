"""torch.utils.benchmark: Timer runs a Python statement many times and returns a Measurement
(median, mean, IQR, torch's repr); Compare prints many of them as tables."""

from scriptc.utils.benchmark.compare import Colorize, Compare
from scriptc.utils.benchmark.measurement import Measurement, TaskSpec, select_unit
from scriptc.utils.benchmark.timer import Language, Timer

__all__ = ["Colorize", "Compare", "Language", "Measurement", "TaskSpec", "Timer", "select_unit"]
