"""Datasets from folders (issue #31): image_dataset_from_directory on a small tree of real
PNG and JPEG files written here (unequal classes, a nested folder, a file that is not an
image, a corrupt image), text_dataset_from_directory, timeseries_dataset_from_array, and
load_img / img_to_array / save_img."""
import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.utils import (image_dataset_from_directory, img_to_array, load_img, save_img,
                         text_dataset_from_directory, timeseries_dataset_from_array)

Image = pytest.importorskip("PIL.Image")
COUNTS = {"cats": 3, "dogs": 5, "owls": 2}


def picture(seed, size):
    return np.random.default_rng(seed).integers(0, 256, size + (3,), dtype=np.uint8)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "images"
    seed = 0
    for name, count in COUNTS.items():
        folder = root / name
        (folder / "more").mkdir(parents=True)
        for k in range(count):
            seed += 1
            target = (folder / "more" if k == 0 else folder) / f"{k}.{'png' if k % 2 else 'jpg'}"
            Image.fromarray(picture(seed, (12 + k, 16))).save(target)
        (folder / "notes.txt").write_text("not an image")
    return root


def test_classes_files_and_labels_follow_the_folders(tree):
    ds = image_dataset_from_directory(tree, image_size=(8, 10), batch_size=4, shuffle=False,
                                      verbose=False)
    assert ds.class_names == ["cats", "dogs", "owls"]
    assert len(ds.file_paths) == sum(COUNTS.values()) and len(ds) == 3      # 4, 4, 2
    labels = np.concatenate([ds[i][1] for i in range(len(ds))])
    assert labels.dtype == np.int32
    assert [ds.class_names[k] for k in labels] == [p.split("/")[-2] if "more" not in p
                                                  else p.split("/")[-3] for p in ds.file_paths]
    assert [int(k) for k in labels] == [0] * 3 + [1] * 5 + [2] * 2
    images = ds[0][0]
    assert images.shape == (4, 8, 10, 3) and images.dtype == np.float32


def test_pixels_are_the_decoded_resized_file(tree):
    ds = image_dataset_from_directory(tree, image_size=(6, 7), batch_size=None, shuffle=False,
                                      interpolation="nearest", verbose=False)
    path = ds.file_paths[1]
    expected = img_to_array(load_img(path, target_size=(6, 7), interpolation="nearest"))
    np.testing.assert_array_equal(ds[1][0], expected)
    png = next(p for p in ds.file_paths if p.endswith(".png"))
    same = image_dataset_from_directory(tree, image_size=(13, 16), batch_size=None,
                                        shuffle=False, verbose=False)
    assert np.asarray(Image.open(png)).shape == (13, 16, 3)           # the 1.png files
    np.testing.assert_array_equal(same[same.file_paths.index(png)][0],
                                  np.asarray(Image.open(png), np.float32))


@pytest.mark.parametrize("mode, channels", [("grayscale", 1), ("rgb", 3), ("rgba", 4)])
def test_color_modes(tree, mode, channels):
    ds = image_dataset_from_directory(tree, color_mode=mode, image_size=(5, 5), verbose=False)
    assert ds[0][0].shape[-1] == channels


def test_label_modes(tree):
    common = dict(image_size=(4, 4), shuffle=False, verbose=False, batch_size=16)
    one_hot = image_dataset_from_directory(tree, label_mode="categorical", **common)[0][1]
    np.testing.assert_array_equal(one_hot.argmax(1), [0] * 3 + [1] * 5 + [2] * 2)
    binary = image_dataset_from_directory(tree, label_mode="binary",
                                          class_names=["owls", "cats"], **common)
    assert binary.class_names == ["owls", "cats"]
    np.testing.assert_array_equal(binary[0][1], [[0.0]] * 2 + [[1.0]] * 3)
    alone = image_dataset_from_directory(tree, labels=None, **common)[0]
    assert isinstance(alone, np.ndarray) and alone.shape == (10, 4, 4, 3)
    with pytest.raises(ValueError, match="label_mode='binary' needs exactly 2 classes, found 3"):
        image_dataset_from_directory(tree, label_mode="binary", **common)
    with pytest.raises(ValueError, match=r"class_names \['bats'\] are not sub-folders"):
        image_dataset_from_directory(tree, class_names=["cats", "bats"], **common)


def test_seeded_shuffle_and_validation_split(tree):
    common = dict(image_size=(4, 4), verbose=False, validation_split=0.3, seed=7)
    train, val = image_dataset_from_directory(tree, subset="both", **common)
    assert len(val.file_paths) == 3 and len(train.file_paths) == 7
    assert sorted(train.file_paths + val.file_paths) == sorted(
        image_dataset_from_directory(tree, shuffle=False, verbose=False).file_paths)
    again = image_dataset_from_directory(tree, subset="validation", **common)
    assert again.file_paths == val.file_paths
    assert image_dataset_from_directory(tree, subset="training", **common).file_paths == \
        train.file_paths
    with pytest.raises(ValueError, match="give a seed"):
        image_dataset_from_directory(tree, validation_split=0.3, subset="training")


def test_fit_on_images_with_parallel_workers_trains_like_one(tree):
    weights = []
    for options in (dict(), dict(workers=2), dict(workers=2, use_multiprocessing=True)):
        ds = image_dataset_from_directory(tree, image_size=(8, 8), batch_size=3, seed=1,
                                          verbose=False, **options)
        hiapi.utils.set_random_seed(0)
        model = hiapi.Sequential([hiapi.Input(shape=(8, 8, 3)), layers.Rescaling(1 / 255),
                                  layers.Flatten(), layers.Dense(3, activation="softmax")])
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        model.fit(ds, epochs=2, verbose=0)
        weights.append(model.get_weights())
    for other in weights[1:]:
        for a, b in zip(weights[0], other):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("options", [{}, {"workers": 2},
                                     {"workers": 2, "use_multiprocessing": True}])
def test_a_corrupt_image_is_an_error_naming_the_file(tree, options):
    broken = tree / "dogs" / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    ds = image_dataset_from_directory(tree, image_size=(4, 4), batch_size=2, shuffle=False,
                                      verbose=False, **options)
    model = hiapi.Sequential([hiapi.Input(shape=(4, 4, 3)), layers.Flatten(),
                              layers.Dense(3, activation="softmax")])
    model.compile(loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match=f"cannot decode the image file '{broken}'"):
        model.fit(ds, epochs=1, verbose=0)


def test_crop_and_pad_to_the_aspect_ratio(tmp_path):
    (tmp_path / "a").mkdir()
    wide = np.zeros((10, 30, 3), np.uint8)
    wide[:, 10:20] = 255                          # a white centre third
    Image.fromarray(wide).save(tmp_path / "a" / "wide.png")
    common = dict(image_size=(10, 10), batch_size=None, verbose=False,
                  interpolation="nearest")
    cropped = image_dataset_from_directory(tmp_path, crop_to_aspect_ratio=True, **common)[0][0]
    assert cropped.min() == 255                   # only the centre square is kept
    padded = image_dataset_from_directory(tmp_path, pad_to_aspect_ratio=True,
                                          image_size=(30, 30), batch_size=None,
                                          verbose=False, interpolation="nearest")[0][0]
    assert padded[:10].max() == 0 and padded[20:].max() == 0   # black bands above and below
    np.testing.assert_array_equal(padded[10:20], wide)


def test_load_img_img_to_array_and_save_img_round_trip(tmp_path):
    array = picture(3, (6, 9)).astype(np.float32)
    save_img(tmp_path / "x.png", array, scale=False)
    img = load_img(tmp_path / "x.png")
    assert img.size == (9, 6)
    np.testing.assert_array_equal(img_to_array(img), array)
    assert img_to_array(img, data_format="channels_first").shape == (3, 6, 9)
    gray = img_to_array(load_img(tmp_path / "x.png", color_mode="grayscale",
                                 target_size=(3, 3)))
    assert gray.shape == (3, 3, 1)
    with pytest.raises(ValueError, match="color_mode must be one of"):
        load_img(tmp_path / "x.png", color_mode="cmyk")


def test_text_dataset_from_directory(tmp_path):
    for name, texts in {"neg": ["bad", "awful film"], "pos": ["good", "great", "fine ok"]}.items():
        (tmp_path / name).mkdir()
        for k, text in enumerate(texts):
            (tmp_path / name / f"{k}.txt").write_text(text)
    (tmp_path / "pos" / "skip.md").write_text("not text data")
    ds = text_dataset_from_directory(tmp_path, batch_size=2, shuffle=False, max_length=4,
                                     verbose=False)
    assert ds.class_names == ["neg", "pos"] and len(ds.file_paths) == 5
    texts, labels = ds[0]
    assert list(texts) == ["bad", "awfu"] and list(labels) == [0, 0]
    assert list(ds[2][0]) == ["fine"] and list(ds[2][1]) == [1]
    train, val = text_dataset_from_directory(tmp_path, validation_split=0.4, subset="both",
                                             seed=2, verbose=False)
    assert len(train.file_paths) == 3 and len(val.file_paths) == 2


def windows_by_hand(data, length, stride, rate, start, end, targets):
    out, first = [], start
    while first + (length - 1) * rate < end and (targets is None or first - start <
                                                 len(targets)):
        out.append((data[first:first + (length - 1) * rate + 1:rate],
                    None if targets is None else targets[first]))
        first += stride
    return out


@pytest.mark.parametrize("length, stride, rate, start, end", [(5, 1, 1, None, None),
                                                             (4, 3, 2, 2, 40),
                                                             (3, 2, 1, 5, None)])
def test_timeseries_windows_match_keras_definition(length, stride, rate, start, end):
    data = np.arange(50 * 2, dtype=np.float32).reshape(50, 2)
    targets = np.arange(50) * 10
    ds = timeseries_dataset_from_array(data, targets, length, sequence_stride=stride,
                                       sampling_rate=rate, batch_size=4, start_index=start,
                                       end_index=end)
    got = [(w, t) for k in range(len(ds)) for w, t in zip(*ds[k])]
    expected = windows_by_hand(data, length, stride, rate, start or 0, end or 50, targets)
    assert len(got) == len(expected)
    for (w, t), (ew, et) in zip(got, expected):
        np.testing.assert_array_equal(w, ew)
        assert t == et


def test_timeseries_shuffle_is_seeded_and_targets_optional():
    data = np.arange(30, dtype=np.float32)[:, None]
    a = timeseries_dataset_from_array(data, None, 4, batch_size=100, shuffle=True, seed=3)[0]
    b = timeseries_dataset_from_array(data, None, 4, batch_size=100, shuffle=True, seed=3)[0]
    np.testing.assert_array_equal(a, b)
    assert a.shape == (27, 4, 1) and not np.array_equal(a[:, 0, 0], np.arange(27))
    np.testing.assert_array_equal(np.sort(a[:, 0, 0]), np.arange(27))
