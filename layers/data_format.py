"""The ``data_format`` argument that image and sequence layers take, checked in one place:
``"channels_last"`` (batch, ..., channels), the default, or ``"channels_first"``
(batch, channels, ...)."""

DATA_FORMATS = ("channels_last", "channels_first")


def check_data_format(layer, data_format):
    """``data_format`` (None meaning ``"channels_last"``), or an error naming ``layer``."""
    if data_format not in (None,) + DATA_FORMATS:
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: data_format must be "
                         f"channels_last or channels_first, got {data_format!r}")
    return data_format or "channels_last"
