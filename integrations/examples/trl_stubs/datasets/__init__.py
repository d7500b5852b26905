"""A stand-in for Hugging Face `datasets`, enough for TRL's GRPOTrainer on a
small in-memory dataset (see ../README.md). Not the real package: used only
where it cannot be imported."""
import torch.utils.data

__version__ = "0.0.0+kforge-stub"
KFORGE_STUB = True


class Dataset(torch.utils.data.Dataset):
    """Rows as dicts, in memory."""

    def __init__(self, rows):
        self._rows = [dict(r) for r in rows]

    @classmethod
    def from_list(cls, rows):
        return cls(rows)

    @classmethod
    def from_dict(cls, columns):
        names = list(columns)
        n = len(columns[names[0]]) if names else 0
        return cls([{k: columns[k][i] for k in names} for i in range(n)])

    @property
    def column_names(self):
        return list(self._rows[0]) if self._rows else []

    @property
    def cache_files(self):  # in memory (TRL's telemetry asks)
        return []

    @property
    def num_rows(self):
        return len(self._rows)

    def __len__(self):
        return len(self._rows)

    def __getitem__(self, i):
        if isinstance(i, str):
            return [r[i] for r in self._rows]
        if isinstance(i, slice):
            return Dataset(self._rows[i])
        return self._rows[i]

    def __iter__(self):
        return iter(self._rows)

    def map(self, fn, *args, **kwargs):
        if kwargs.get("batched"):
            raise NotImplementedError("datasets stub: batched map")
        return Dataset([{**r, **(fn(r) or {})} for r in self._rows])

    def remove_columns(self, names):
        names = [names] if isinstance(names, str) else list(names)
        return Dataset([{k: v for k, v in r.items() if k not in names}
                        for r in self._rows])

    def __repr__(self):
        return (f"Dataset(stub)({{features: {self.column_names}, "
                f"num_rows: {len(self)}}})")


class IterableDataset(torch.utils.data.IterableDataset):
    """Only for isinstance checks: the stub never builds one."""

    def __iter__(self):
        raise NotImplementedError("datasets stub: IterableDataset")


class DatasetDict(dict):
    pass


class IterableDatasetDict(dict):
    pass


def load_dataset(*args, **kwargs):
    raise NotImplementedError("datasets stub: load_dataset needs the real "
                              "datasets package")


def concatenate_datasets(parts, *args, **kwargs):
    return Dataset([r for p in parts for r in p])
