"""Task operations, split strategies and task specs a claim can name (built by
`grokverify.engine.tasks`), with split sizes and label counts counted without building the pairs,
so claims are checked when they load."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Protocol

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from grokverify.claim.base import Float, Int, RngSeed, StrictModel, known
from grokverify.claim.limits import MAX_IMAGES, MAX_P, MAX_SKEW
from grokverify.kinds import SPLITS, TASKS


class _Task(Protocol):
    op: str
    p: int
    modular: bool
    unordered: bool
    train_frac: float
    test_frac: float | None


class TaskOp:
    """An operation on operand pairs (registered in `grokverify.kinds.TASKS`, computed by the
    function its registration names): what the schema needs of it without building the pairs."""

    op: ClassVar[str]
    nonzero_b: ClassVar[bool] = False  # its pairs leave b = 0 out (division)

    @staticmethod
    def span(p: int) -> int:
        """How many raw results its ordered pairs of 0..p-1 span (max - min + 1): the classes
        of a non-modular task."""
        raise NotImplementedError

    @staticmethod
    def undefined_for(task: _Task) -> str | None:
        """Why the operation is undefined for this task, refused at load (None: it is defined)."""
        return None


@TASKS.register("grokverify.engine.tasks:add")
class Add(TaskOp):
    op = "add"

    @staticmethod
    def span(p: int) -> int:
        return 2 * p - 1


@TASKS.register("grokverify.engine.tasks:sub")
class Sub(TaskOp):
    op = "sub"

    @staticmethod
    def span(p: int) -> int:
        return 2 * p - 1


@TASKS.register("grokverify.engine.tasks:mul")
class Mul(TaskOp):
    op = "mul"

    @staticmethod
    def span(p: int) -> int:
        return (p - 1) ** 2 + 1


@TASKS.register("grokverify.engine.tasks:div")
class Div(TaskOp):
    op = "div"
    nonzero_b = True

    @staticmethod
    def span(p: int) -> int:
        return p

    @staticmethod
    def undefined_for(task: _Task) -> str | None:
        if not task.modular or not _is_prime(task.p):
            return "op 'div' needs modular: true and a prime p (modular inverse)"
        return None


@TASKS.register("grokverify.engine.tasks:sq_sum")
class SqSum(TaskOp):
    op = "sq_sum"

    @staticmethod
    def span(p: int) -> int:
        return 2 * (p - 1) ** 2 + 1


@TASKS.register("grokverify.engine.tasks:s3")
class S3(TaskOp):
    """Composition of S3's 6 elements (p = 6), each result one of them (paper 2's App. H)."""

    op = "s3"

    @staticmethod
    def span(p: int) -> int:
        return p

    @staticmethod
    def undefined_for(task: _Task) -> str | None:
        if task.p != 6 or task.unordered:
            return ("op 's3' (paper 2's App. H: composing the 6 permutations of three things) "
                    "needs p: 6 and unordered: false (it is not commutative)")
        return None


class _S5(TaskOp):
    """An operation on S5's 120 elements (p = 120), each result one of them."""

    @staticmethod
    def span(p: int) -> int:
        return p

    @classmethod
    def undefined_for(cls, task: _Task) -> str | None:
        if task.p != 120 or task.unordered:
            return (f"op {cls.op!r} (Power et al.'s S5: the 120 permutations of five things) "
                    "needs p: 120 and unordered: false (it is not commutative)")
        return None


@TASKS.register("grokverify.engine.tasks:s5")
class S5(_S5):
    """x ∘ y on S5 (Power et al. 2022, Fig. 4's 'x∘y' on S5)."""

    op = "s5"


@TASKS.register("grokverify.engine.tasks:s5_conj")
class S5Conj(_S5):
    """x ∘ y ∘ x⁻¹ on S5 (Power et al. 2022's 'x∘y∘x⁻¹')."""

    op = "s5_conj"


class SplitStrategy:
    """How a seed's training pairs are drawn (registered in `grokverify.kinds.SPLITS`)."""

    split: ClassVar[str]


@SPLITS.register("grokverify.engine.tasks:split_random")
class RandomSplit(SplitStrategy):
    split = "random"


@SPLITS.register("grokverify.engine.tasks:split_uniform")
class UniformSplit(SplitStrategy):
    """Round-robin over values of a, each time the pair whose b is least used so far."""

    split = "uniform"


@SPLITS.register("grokverify.engine.tasks:split_skewed")
class SkewedSplit(SplitStrategy):
    """Weighted sampling without replacement, weight exp(-skew · a / p)."""

    split = "skewed"


def class_count(task: _Task) -> int:
    """The number of labels: p when modular, else the results' span (at most: an unordered
    task's span can be smaller; `grokverify.engine.tasks.labels_for` counts them, a test checks the
    bound)."""
    return task.p if task.modular else TASKS[task.op].span(task.p)


def pair_count(task: _Task) -> int:
    """How many (a, b) pairs the task defines: unordered tasks keep a <= b, division drops b = 0
    (`grokverify.engine.tasks.pairs_for` builds them; a test checks the two agree)."""
    p = task.p
    n = p * (p + 1) // 2 if task.unordered else p * p
    if TASKS[task.op].nonzero_b:
        n -= 1 if task.unordered else p
    return n


def split_sizes(task: _Task) -> tuple[int, int, int]:
    """(pairs, training pairs, validation pairs) of a task, the same for every seed."""
    n = pair_count(task)
    n_test = int(round(task.test_frac * n)) if task.test_frac is not None else 0
    # Rounding both fractions can overshoot N by one (p=5, 0.7 + 0.3): cap at what is left.
    n_train = min(int(round(task.train_frac * n)), n - n_test)
    return n, n_train, n_test if task.test_frac is not None else n - n_train


# ---------------------------------------------------------------- image datasets


@dataclass(frozen=True)
class ImageDataset:
    """A dataset of images read from the user's own copy of its standard IDX files
    (`grokverify.engine.datasets`): nothing is downloaded and nothing is stored in the
    repository."""

    features: int  # pixels of one image, flattened
    classes: int
    train_rows: int  # rows of the standard training file
    test_rows: int  # rows of the standard test file
    files: dict[str, tuple[str, str]]  # part ("train", "test") -> (images file, labels file)
    where: str  # where the files come from, for the message when they are missing


IMAGE_DATASETS: dict[str, ImageDataset] = {
    "mnist": ImageDataset(
        features=28 * 28, classes=10, train_rows=60_000, test_rows=10_000,
        files={"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
               "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")},
        where="yann.lecun.com/exdb/mnist or a mirror of it"),
}


# ---------------------------------------------------------------- task specs


class TaskSpec(StrictModel):
    """An arithmetic task and how its pairs are split."""

    op: str = Field(description="operation: add, sub, mul, div, sq_sum, s3 (p = 6: a ∘ b in "
                                "the symmetric group S3), s5 and s5_conj (p = 120: a ∘ b and "
                                "a ∘ b ∘ a⁻¹ in S5)")
    p: Int = Field(ge=2, le=MAX_P, description="operands are 0..p-1; the modulus when modular")
    modular: bool = Field(True, description="labels mod p; otherwise the raw result")
    unordered: bool = Field(False, description="keep only pairs a <= b (paper 2's toy)")
    train_frac: Float = Field(gt=0, le=1, description="fraction of all pairs used for training")
    test_frac: Float | None = Field(
        None, gt=0, le=1,
        description="fraction of all pairs held out at random as the validation set before the "
                    "training pairs are drawn (paper 1: 0.2); null: validate on every pair not "
                    "in training (paper 2)")
    split: str = Field("random",
                       description="how training pairs are drawn: random, uniform, skewed")
    skew: Float = Field(3.0, gt=0, le=MAX_SKEW,
                        description="skewed split: weight exp(-skew * a / p)")
    split_seed: RngSeed | None = Field(None,
                                       description="fix the split for every seed; null: per seed")

    @field_validator("op")
    @classmethod
    def _known_op(cls, v: str) -> str:
        return known(v, TASKS, "operation")

    @field_validator("split")
    @classmethod
    def _known_split(cls, v: str) -> str:
        return known(v, SPLITS, "split strategy")

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        if self.test_frac is not None and self.train_frac + self.test_frac > 1 + 1e-9:
            raise ValueError(f"train_frac + test_frac must be <= 1, got "
                             f"{self.train_frac} + {self.test_frac}")
        if why := TASKS[self.op].undefined_for(self):
            raise ValueError(why)
        n, n_train, n_val = split_sizes(self)
        if n_train < 1 or n_val < 1:
            raise ValueError(f"this split leaves {n_train} training and {n_val} validation "
                             f"pairs of {n}; both need at least one (change train_frac/test_frac)")
        return self

    # What the rest of the library asks of any task kind (`ImageTaskSpec` answers the same).
    inputs: ClassVar[str] = "pairs"  # what a model kind must read (`ModelSpec.inputs`)
    size_field: ClassVar[str] = "p"  # the setting that sets the split's size

    def sizes(self) -> tuple[int, int, int]:
        """(rows, training rows, validation rows), the same for every seed."""
        return split_sizes(self)

    def classes(self) -> int:
        return class_count(self)

    def input_size(self) -> int:
        """What a model's input layer is sized by: the operand values."""
        return self.p

    def data_name(self) -> str | None:
        """The dataset whose files a run needs (`grokverify.engine.datasets`); None: built from the
        spec alone."""
        return None

    def table_bytes(self, n_seeds: int) -> int:
        """Memory of data every seed shares (beside each seed's own rows)."""
        return 0

    def describe(self) -> str:
        return f"p {self.p}, train_frac {self.train_frac:g}"


class ImageTaskSpec(StrictModel):
    """Classification of a dataset's images (paper 2's MNIST, §4.3): each seed trains on its own
    `n_train` images drawn from the standard training file and is validated on `n_val` images
    drawn from the test file (all of them by default), both from the seed's split stream."""

    dataset: str = Field(description="an image dataset read from the user's IDX files: mnist")
    n_train: Int = Field(ge=1, le=MAX_IMAGES,
                         description="training images, drawn per seed from the training file "
                                     "(paper 2: 1,000)")
    n_val: Int | None = Field(None, ge=1, le=MAX_IMAGES,
                              description="validation images, drawn per seed from the test "
                                          "file; null: every test image")
    split_seed: RngSeed | None = Field(None,
                                       description="fix the draw for every seed; null: per seed")

    inputs: ClassVar[str] = "images"
    size_field: ClassVar[str] = "n_train"

    @field_validator("dataset")
    @classmethod
    def _known_dataset(cls, v: str) -> str:
        return known(v, tuple(IMAGE_DATASETS), "image dataset")

    @model_validator(mode="after")
    def _fits_files(self) -> ImageTaskSpec:
        info = IMAGE_DATASETS[self.dataset]
        if self.n_train > info.train_rows:
            raise ValueError(f"n_train {self.n_train} exceeds the {info.train_rows} images of "
                             f"{self.dataset}'s training file")
        if self.n_val is not None and self.n_val > info.test_rows:
            raise ValueError(f"n_val {self.n_val} exceeds the {info.test_rows} images of "
                             f"{self.dataset}'s test file")
        return self

    def sizes(self) -> tuple[int, int, int]:
        n_val = self.n_val or IMAGE_DATASETS[self.dataset].test_rows
        return self.n_train + n_val, self.n_train, n_val

    def classes(self) -> int:
        return IMAGE_DATASETS[self.dataset].classes

    def input_size(self) -> int:
        """The pixels of one image."""
        return IMAGE_DATASETS[self.dataset].features

    def data_name(self) -> str | None:
        return self.dataset

    def table_bytes(self, n_seeds: int) -> int:
        """The images the seeds use, as float32, held once for all of them: at most every
        seed's own rows, and at most the files' rows."""
        info = IMAGE_DATASETS[self.dataset]
        rows = min(n_seeds * self.sizes()[0], info.train_rows + info.test_rows)
        return 4 * self.input_size() * rows

    def describe(self) -> str:
        return f"{self.dataset}, n_train {self.n_train}"


def _task_kind(value: Any) -> str:
    """The task kind a mapping describes: an image task names its `dataset`."""
    if isinstance(value, ImageTaskSpec) or (isinstance(value, dict) and "dataset" in value):
        return "ImageTaskSpec"
    return "TaskSpec"


AnyTask = Annotated[
    Annotated[TaskSpec, Tag("TaskSpec")] | Annotated[ImageTaskSpec, Tag("ImageTaskSpec")],
    Discriminator(_task_kind),
]


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % k for k in range(2, int(n**0.5) + 1))
