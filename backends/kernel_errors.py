"""Error messages that every backend's kernels raise alike, so a user reads the same words
whichever backend ran the step."""


def gather_range_error(where, bad, rows):
    """The message every backend's gather kernel raises for an out-of-range index."""
    return (f"{where}: index {bad} is out of range; valid indices are [0, {rows}) for a "
            f"table of {rows} rows")
