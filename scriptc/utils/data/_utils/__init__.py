"""The machinery behind DataLoader: collate, fetchers, worker processes and their shared-memory batches."""
