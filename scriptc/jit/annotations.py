"""torch.jit.annotations: the annotation names library signatures import from here -
BroadcastingList1/2/3 (a T or a list of N of them; scripted code makes a single T a list of N, as
torchvision's roi_align takes output_size) and typing's names."""

from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: F401

from scriptc.nn.functional.annotations import BroadcastingList1, BroadcastingList2, BroadcastingList3  # noqa: F401
