"""torch.utils.data: datasets, samplers and the DataLoader (worker processes over shared memory)."""

from scriptc.utils.data._utils.collate import default_collate, default_convert
from scriptc.utils.data._utils.worker import WorkerInfo, get_worker_info
from scriptc.utils.data.dataloader import DataLoader
from scriptc.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from scriptc.utils.data.distributed import DistributedSampler
from scriptc.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["DataLoader", "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DistributedSampler", "default_collate",
           "default_convert", "get_worker_info", "WorkerInfo"]
