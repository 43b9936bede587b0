"""The annotation names torch.nn.functional exports for its own signatures: BroadcastingListN[T], a
T or a list of N of them (F.lp_pool2d's kernel_size); scripted code makes a single T a list of N."""

from __future__ import annotations

__all__ = ["BroadcastingList1", "BroadcastingList2", "BroadcastingList3"]


class _BroadcastingList:
    """BroadcastingListN: subscripted with the element type in an annotation."""

    def __init__(self, length: int):
        self.length = length

    def __getitem__(self, element) -> "_BroadcastingList":
        return self

    def __repr__(self) -> str:
        return f"BroadcastingList{self.length}"


BroadcastingList1, BroadcastingList2, BroadcastingList3 = (_BroadcastingList(n) for n in (1, 2, 3))
