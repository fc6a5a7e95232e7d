"""``workers=1``: batches read in the training thread, one at a time, when the step asks."""


class InlineLoader:
    workers = 0          # no thread beside the step's

    def __init__(self, dataset):
        self.dataset = dataset

    def items(self, indices):
        for index in indices:
            yield self.dataset[int(index)]

    def close(self):
        pass
