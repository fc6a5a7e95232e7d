"""``image_dataset_from_directory``: a folder of class sub-folders of images as a PyDataset
of (images, labels) batches, with Keras's arguments.

    main/
      cats/  a.jpg b.png ...
      dogs/  c.jpg ...

    train, val = hiapi.utils.image_dataset_from_directory(
        "main", image_size=(64, 64), batch_size=32, validation_split=0.2, subset="both",
        seed=1, workers=4)               # decoded by 4 threads while the step runs
    train.class_names                    # ['cats', 'dogs']
    model.fit(train, validation_data=val, epochs=5)

Images are float32 in 0..255 (rescale in the model), ``(height, width, channels)``. A file
that cannot be decoded stops the epoch with a ``ValueError`` naming it (Keras's tf.data
raises too; remove or replace the file).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi.utils import directory_index
from hiapi.utils.file_dataset import FileDataset
from hiapi.utils.image_utils import (centre_crop_box, check_color_mode, img_to_array, load_img,
                                     pil, resample)

IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
WHAT = "image_dataset_from_directory"


class ImageReader:
    """One image file as a float32 array: decoded in ``color_mode``, centre-cropped or padded
    to the target's aspect ratio if asked, resized to ``image_size``. Picklable, for worker
    processes."""

    def __init__(self, image_size, color_mode, interpolation, crop_to_aspect_ratio,
                 pad_to_aspect_ratio, data_format):
        self.height, self.width = image_size
        self.color_mode, self.interpolation = color_mode, interpolation
        self.crop, self.pad, self.data_format = crop_to_aspect_ratio, pad_to_aspect_ratio, \
            data_format

    def __call__(self, path: str) -> np.ndarray:
        image = load_img(path, color_mode=self.color_mode)
        if self.crop:
            image = image.crop(centre_crop_box(image.width, image.height, self.width,
                                               self.height))
        elif self.pad:
            image = self._padded(image)
        if image.size != (self.width, self.height):
            image = image.resize((self.width, self.height), resample(self.interpolation, WHAT))
        return img_to_array(image, self.data_format)

    def _padded(self, image):
        """Centred on black, enlarged to the target's aspect ratio."""
        width = max(image.width, round(image.height * self.width / self.height))
        height = max(image.height, round(image.width * self.height / self.width))
        padded = pil().new(image.mode, (width, height))
        padded.paste(image, ((width - image.width) // 2, (height - image.height) // 2))
        return padded


def image_dataset_from_directory(
        directory: str, labels: Any = "inferred", label_mode: str | None = "int",
        class_names: list[str] | None = None, color_mode: str = "rgb",
        batch_size: int | None = 32, image_size: tuple[int, int] = (256, 256),
        shuffle: bool = True, seed: int | None = None, validation_split: float | None = None,
        subset: str | None = None, interpolation: str = "bilinear", follow_links: bool = False,
        crop_to_aspect_ratio: bool = False, pad_to_aspect_ratio: bool = False,
        data_format: str | None = None, verbose: bool = True, *, workers: int = 1,
        use_multiprocessing: bool = False, max_queue_size: int = 10) -> Any:
    """Keras's arguments and defaults; returns a ``FileDataset`` (a PyDataset with
    ``class_names`` and ``file_paths``), or a (training, validation) pair for
    ``subset="both"``. hiapi adds ``workers``, ``use_multiprocessing`` and
    ``max_queue_size``: the PyDataset's, which decode batches in parallel."""
    check_color_mode(color_mode, WHAT)
    resample(interpolation, WHAT)
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError(f"{WHAT}: give crop_to_aspect_ratio or pad_to_aspect_ratio, not both")
    if len(tuple(image_size)) != 2 or min(image_size) < 1:
        raise ValueError(f"{WHAT}: image_size must be (height, width), got {image_size!r}")
    label_mode = None if labels is None else label_mode
    directory_index.check_split(validation_split, subset, shuffle, seed, WHAT)
    paths, label_array, class_names = directory_index.index_directory(
        directory, labels, IMAGE_FORMATS, class_names, shuffle, seed, follow_links, WHAT)
    if not paths:
        raise ValueError(f"{WHAT}: no images found in {str(directory)!r} (formats "
                         f"{IMAGE_FORMATS})")
    num_classes = None if class_names is None else len(class_names)
    encoded = directory_index.encode_labels(label_array, label_mode, num_classes, WHAT)
    read = ImageReader(tuple(image_size), color_mode, interpolation, crop_to_aspect_ratio,
                       pad_to_aspect_ratio, data_format)
    options = dict(workers=workers, use_multiprocessing=use_multiprocessing,
                   max_queue_size=max_queue_size)

    def made(part):
        files, part_labels = directory_index.split(paths, encoded, validation_split, part)
        directory_index.report(len(paths), num_classes, len(files), part, verbose)
        return FileDataset(files, part_labels, read, batch_size, class_names, **options)
    if subset == "both":
        return made("training"), made("validation")
    return made(subset)
