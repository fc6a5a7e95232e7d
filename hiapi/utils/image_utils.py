"""Keras's image file helpers: ``load_img``, ``img_to_array``, ``array_to_img``,
``save_img``. Pillow decodes and encodes (the ``image`` extra: ``pip install hiapi[image]``);
it is imported when one of these is called, so hiapi runs without it.

    img = hiapi.utils.load_img("cat.jpg", target_size=(64, 64))
    x = hiapi.utils.img_to_array(img)          # float32, shape (64, 64, 3), values 0..255
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from hiapi import config

# Keras's interpolation names, as Pillow's resampling filters ("area" is a box average).
INTERPOLATIONS = {"nearest": "NEAREST", "bilinear": "BILINEAR", "bicubic": "BICUBIC",
                  "area": "BOX", "lanczos3": "LANCZOS", "lanczos5": "LANCZOS",
                  "hamming": "HAMMING", "box": "BOX", "lanczos": "LANCZOS"}
COLOR_MODES = {"grayscale": "L", "rgb": "RGB", "rgba": "RGBA"}


def pil():
    """Pillow's Image module, or an error saying how to install it."""
    try:
        from PIL import Image
    except ImportError as error:
        raise ImportError("hiapi's image helpers need Pillow: pip install 'hiapi[image]' "
                          "(or pip install pillow)") from error
    return Image


def resample(interpolation: str, what: str) -> Any:
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"{what}: interpolation must be one of {sorted(INTERPOLATIONS)}, got "
                         f"{interpolation!r}")
    return getattr(pil().Resampling, INTERPOLATIONS[interpolation])


def check_color_mode(color_mode: str, what: str) -> str:
    if color_mode not in COLOR_MODES:
        raise ValueError(f"{what}: color_mode must be one of {list(COLOR_MODES)}, got "
                         f"{color_mode!r}")
    return COLOR_MODES[color_mode]


def load_img(path: str | os.PathLike[str], color_mode: str = "rgb",
             target_size: tuple[int, int] | None = None, interpolation: str = "nearest",
             keep_aspect_ratio: bool = False) -> Any:
    """The image at ``path`` as a PIL Image in ``color_mode`` ("grayscale", "rgb", "rgba"),
    resized to ``target_size`` (height, width) if given; ``keep_aspect_ratio`` first crops
    the centre to the target's aspect ratio. A file Pillow cannot decode is a ``ValueError``
    naming it."""
    mode = check_color_mode(color_mode, "load_img")
    Image = pil()
    try:
        with Image.open(path) as opened:
            image = opened.convert(mode)
    except (OSError, SyntaxError, ValueError) as error:    # Pillow's decode failures
        raise ValueError(f"load_img: cannot decode the image file {os.fspath(path)!r} "
                         f"({type(error).__name__}: {error})") from error
    if target_size is not None:
        height, width = target_size
        if keep_aspect_ratio:
            image = image.crop(centre_crop_box(image.width, image.height, width, height))
        if (image.height, image.width) != (height, width):
            image = image.resize((width, height), resample(interpolation, "load_img"))
    return image


def centre_crop_box(width: int, height: int, target_width: int, target_height: int):
    """The largest centred (left, top, right, bottom) box with the target's aspect ratio."""
    crop_width = min(width, round(height * target_width / target_height))
    crop_height = min(height, round(width * target_height / target_width))
    left, top = (width - crop_width) // 2, (height - crop_height) // 2
    return left, top, left + crop_width, top + crop_height


def img_to_array(img: Any, data_format: str | None = None, dtype: Any = None) -> np.ndarray:
    """A PIL Image as a float32 array (height, width, channels), or (channels, height,
    width) for ``data_format="channels_first"``; grayscale gets a channel axis of 1."""
    array = np.asarray(img, dtype=dtype or np.float32)
    if array.ndim == 2:
        array = array[:, :, None]
    if array.ndim != 3:
        raise ValueError(f"img_to_array: expected an image, got an array of shape "
                         f"{array.shape}")
    return _channels(array, data_format, "img_to_array", to_first=True)


def array_to_img(x: Any, data_format: str | None = None, scale: bool = True,
                 dtype: Any = None) -> Any:
    """A (height, width, channels) array as a PIL Image; ``scale`` maps its range onto
    0..255 first."""
    array = np.asarray(x, dtype=dtype or np.float32)
    if array.ndim != 3 or (array.shape[-1] not in (1, 3, 4) and array.shape[0] not in (1, 3, 4)):
        raise ValueError(f"array_to_img: expected (height, width, 1|3|4), got shape "
                         f"{array.shape}")
    array = _channels(array, data_format, "array_to_img", to_first=False)
    if scale:
        array = array - array.min()
        top = array.max()
        array = array / top * 255 if top > 0 else array
    array = np.clip(np.round(array), 0, 255).astype(np.uint8)
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[array.shape[-1]]
    return pil().fromarray(array[:, :, 0] if mode == "L" else array, mode)


def save_img(path: str | os.PathLike[str], x: Any, data_format: str | None = None,
             file_format: str | None = None, scale: bool = True, **kwargs: Any) -> None:
    """Write the array ``x`` as an image file (format from the extension or
    ``file_format``)."""
    array_to_img(x, data_format, scale).save(path, format=file_format, **kwargs)


def _channels(array, data_format, what, to_first):
    data_format = data_format or config.image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{what}: data_format must be 'channels_last' or 'channels_first', "
                         f"got {data_format!r}")
    if data_format == "channels_last":
        return array
    return np.moveaxis(array, -1, 0) if to_first else np.moveaxis(array, 0, -1)
