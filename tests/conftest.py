from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from grokverify.engine.numerics import pin_environment

pin_environment()  # this process trains: pin before any torch computation

import numpy as np  # noqa: E402
import torch  # noqa: E402

if TYPE_CHECKING:
    from grokverify.stats.base import ArmSample, CriterionResult

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parent.parent


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture
def tiny_claim() -> Path:
    return FIXTURES / "tiny_claim.yaml"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true",
                     help="also run the tests marked slow (more compute than CI affords)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def write_tiny_images(folder: Path, n_train: int = 120, n_test: int = 60, seed: int = 0,
                      compress: bool = False) -> Path:
    """A made-up dataset in MNIST's four IDX files (28 × 28 bytes, 10 classes): each class a
    fixed random template plus noise, so a small MLP learns it in a few steps. A test fixture,
    never data a claim is judged on."""
    import numpy as np

    from grokverify.claim.tasks import IMAGE_DATASETS
    from grokverify.engine.idx import write_idx

    rng = np.random.default_rng(seed)
    templates = rng.integers(0, 256, (10, 28, 28))
    folder.mkdir(parents=True, exist_ok=True)
    files = IMAGE_DATASETS["mnist"].files
    for part, n in (("train", n_train), ("test", n_test)):
        labels = (np.arange(n) % 10).astype(np.uint8)
        noise = rng.integers(-60, 61, (n, 28, 28))
        images = np.clip(templates[labels] + noise, 0, 255).astype(np.uint8)
        suffix = ".gz" if compress else ""
        write_idx(folder / (files[part][0] + suffix), images, compress=compress)
        write_idx(folder / (files[part][1] + suffix), labels, compress=compress)
    return folder


@pytest.fixture(scope="session")
def tiny_images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_images(tmp_path_factory.mktemp("data") / "mnist")


# ---------------------------------------------------------------- statistics tests


def has_phrase(text: str, phrase: str) -> bool:
    """`phrase` in `text` as whole words: no letter or digit runs on at a word-edged end, so
    "not part of the store" is not found in "XXnot part of the storeXX"."""
    head = r"(?<!\w)" if re.match(r"\w", phrase) else ""
    tail = r"(?!\w)" if re.search(r"\w$", phrase) else ""
    return re.search(head + re.escape(phrase) + tail, text) is not None


class Has:
    """A text holding every one of `phrases` (as whole words): where a test pins a sentence's
    key phrases and numbers, alone (``reason == Has(...)``) or inside a dict or list it
    compares whole."""

    def __init__(self, *phrases: str) -> None:
        self.phrases = phrases

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and all(has_phrase(other, p) for p in self.phrases)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Has{self.phrases!r}"


def run_criterion(params: dict[str, Any], *arms: ArmSample) -> CriterionResult:
    """`params` (a criterion as a claim file writes it) judged on `arms`; every result must be
    JSON without NaN and its reason end in one full stop (no ".." or "., " where parts join)."""
    from grokverify.kinds import CRITERIA
    from grokverify.stats.base import judge

    result = judge(CRITERIA[params["name"]].model_validate(params), {a.name: a for a in arms})
    json.dumps(result.to_dict(), allow_nan=False)
    assert result.reason.endswith(".") and ".." not in result.reason, result.reason
    assert "., " not in result.reason and ".;" not in result.reason, result.reason
    return result


def lognormal_arm(name: str, median: float, seed: int | np.random.Generator = 0, n: int = 20,
                  sigma: float = 0.3, budget: float = math.inf, every: float = 1.0) -> ArmSample:
    """Times to threshold: log-normal steps rounded up to a multiple of `every` (the evaluation
    interval), censored at `budget`; drawn from `seed` (or from that Generator)."""
    from grokverify.stats.simulate import make_arm

    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    steps = np.ceil(np.exp(rng.normal(math.log(median), sigma, n)) / every) * every
    return make_arm(name, np.minimum(steps, budget), steps <= budget)


def normal_arm(name: str, mean: float, seed: int, n: int = 20) -> ArmSample:
    """n seeds of normal values (sd 1) around `mean`."""
    from grokverify.stats.simulate import make_arm

    return make_arm(name, np.random.default_rng(seed).normal(mean, 1.0, n))


def share_arm(name: str, share: float, seed: int, n: int = 60) -> ArmSample:
    """n seeds of 0/1 values (a value metric), each 1 with probability `share`."""
    from grokverify.stats.simulate import make_arm

    values = (np.random.default_rng(seed).random(n) < share).astype(float)
    return make_arm(name, values, kind="value")


def hesterberg_level(ci_level: float, n: int) -> float:
    """Hesterberg's expanded bootstrap level 1 - 2 Phi(-sqrt(n/(n-1)) t_(n-1, 1-alpha/2))."""
    from scipy import stats as sps

    t = sps.t.ppf(1 - (1 - ci_level) / 2, n - 1)
    return float(1 - 2 * sps.norm.cdf(-math.sqrt(n / (n - 1)) * t))


def logrank_oracle(base: ArmSample, treat: ArmSample) -> tuple[float, float]:
    """Log-rank chi2 (1 df) and p by its hypergeometric sums: (O - E)^2 / V of the baseline arm
    over the event times."""
    from scipy import stats as sps

    time = np.r_[base.values, treat.values]
    event = np.r_[base.observed, treat.observed]
    group0 = np.r_[np.ones(base.n, bool), np.zeros(treat.n, bool)]
    o_minus_e = var = 0.0
    for u in np.unique(time[event]):
        risk = time >= u
        n, n0 = risk.sum(), (risk & group0).sum()
        d = ((time == u) & event).sum()
        o_minus_e += ((time == u) & event & group0).sum() - d * n0 / n
        var += d * (n0 / n) * (1 - n0 / n) * (n - d) / max(n - 1, 1)
    chi2 = o_minus_e ** 2 / var
    return chi2, float(sps.chi2.sf(chi2, 1))


def seed_result(curves: dict[str, tuple[list[int], list[float | None]]] | None = None,
                **summary: Any) -> dict[str, Any]:
    """A store record's ``result``: named curves, each with its own steps, and the summary of a
    1000-step run (overridden by `summary`)."""
    base = {"seed": 0, "budget": 1000, "train_step": None, "val_step": None, "gap": None,
            "diverged": False, "diverged_step": None, "stopped_step": 1000,
            "final_train_acc": 0.5, "final_val_acc": 0.5, "final_train_loss": 1.0,
            "final_val_loss": 1.0, "done": True}
    return {"seed": 0, "budget": base["budget"],
            "curves": {name: {"steps": steps, "values": values}
                       for name, (steps, values) in (curves or {}).items()},
            "summary": {**base, **summary}}


# the censoring and method words several criteria's details share, by their key phrases
AS_BUDGET = Has("censored values enter as their censoring value (the budget), a lower bound",
                "on the true value; the lower-bound rule withholds any verdict that this",
                "could have produced (see docs/verdicts.md)")
REFUSE = Has("censored: refuse -- any censored value withholds the verdict")
NOT_CENSORED = Has("none: a value metric is never censored", "left out and counted")
P_METHOD = Has("inversion of the bootstrap interval", "smallest one-sided level",
               "inside (support) / outside (refute) the claimed region")
LEVEL_RULE = Has("Hesterberg's expanded level 1 - 2 Phi(-sqrt(n/(n-1)) t_(n-1, 1-alpha/2))",
                 "n = smallest arm")
SPEARMAN_PAIRS = Has("Spearman rank correlation of the paired seeds' values",
                     "enters at its censoring value (the budget)",
                     "tied with the other censored seeds")


def correlated_arms(rng: np.random.Generator, n: int, rho: float, ratio: float = 0.7,
                    sigma: float = 0.5, budget: float = math.inf) -> tuple[ArmSample, ArmSample]:
    """Arms 'b' and 't' of log-normal times (medians 1000 and 1000 * ratio), seed i's log times
    correlated at rho across the arms (seeds 0..n-1)."""
    from grokverify.stats.simulate import correlated_pair, lognormal_times, make_arm

    zb, zt = correlated_pair(rng, n, rho)
    b, t = (lognormal_times(z, m, sigma, budget) for z, m in ((zb, 1000.0), (zt, 1000 * ratio)))
    return make_arm("b", *b), make_arm("t", *t)


def metric_spec(**spec: Any) -> Any:
    """A metric as a claim file writes it (``name`` and its fields), validated."""
    import pydantic

    from grokverify.claim.criteria import AnyMetric

    return pydantic.TypeAdapter(AnyMetric).validate_python(spec)


# ---------------------------------------------------------------- claim and run tests


def problems(tmp_path: Path, text: str) -> list[str]:
    """The problems a claim is refused with, each as `line path: message` (file left out)."""
    from grokverify.claim.load import load_claim
    from grokverify.claim.yamlio import SpecError

    path = tmp_path / "claim.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_claim(path, limits=None)
    out = []
    for p in info.value.problems:
        assert p.file == str(path)
        out.append(f"{p.line} {p.path}: {p.message}" if p.path else f"{p.line} {p.message}")
    return out


def console_script() -> list[str]:
    """The installed `grokverify` entry point (else `python -m grokverify.cli`)."""
    import sys

    script = Path(sys.executable).with_name("grokverify")
    return [str(script)] if script.exists() else [sys.executable, "-m", "grokverify.cli"]


def default_sigint() -> None:
    """A child's Ctrl-C as in a terminal: a parent that ignores SIGINT (a test runner's worker, a
    script's background job) passes that on, and Python then keeps ignoring it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def python_sigint() -> Iterator[None]:
    """Ctrl-C raising KeyboardInterrupt in this process, as in a terminal, also where the
    runner was started ignoring SIGINT (a background job: Python then keeps ignoring it)."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


# ---------------------------------------------------------------- engine

from grokverify.claim.experiment import ExperimentSpec  # noqa: E402
from grokverify.engine.batched import BatchedModel  # noqa: E402

ADD7 = {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3}  # 49 pairs, 29 for training
TOY6 = {"op": "add", "p": 6, "modular": False, "unordered": True, "train_frac": 0.6}


def make_exp(task: dict[str, Any], model: dict[str, Any], optimizer: dict[str, Any],
             training: dict[str, Any], **sections: Any) -> ExperimentSpec:
    """An experiment from its sections as a claim file writes them (probes, interventions...)."""
    return ExperimentSpec.model_validate({"task": task, "model": model, "optimizer": optimizer,
                                          "training": training, **sections})


def records_by_seed(exp: ExperimentSpec, seeds: list[int],
                    threads: int = 1) -> dict[int, dict[str, Any]]:
    """Each seed's record from one `train_seeds` on `threads` torch threads (one CPU shard a
    thread), by seed; torch's thread count is restored."""
    from grokverify.engine.loop import train_seeds

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return {r["seed"]: r for r in train_seeds(exp, seeds)}
    finally:
        torch.set_num_threads(before)


def operands(p: int, s: int, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random operands a, b, (S, n) each in 0..p-1, from a generator seeded with `seed`."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, p, (s, n), generator=gen), torch.randint(0, p, (s, n), generator=gen)


def train_rows(task: Any, seeds: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each seed's training rows a, b, y, (S, n) each, from its own split (built apart from the
    engine's `SeedData`)."""
    from grokverify.engine.tasks import build_dataset

    data = [build_dataset(task, s) for s in seeds]
    a, b, y = (torch.as_tensor(np.stack([getattr(d, k)[d.train_idx] for d in data]))
               for k in ("a", "b", "y"))
    return a, b, y


def assert_each_seed_is_its_plain_module(model: BatchedModel, a: torch.Tensor, b: torch.Tensor,
                                         y: torch.Tensor) -> None:
    """Seed i's outputs of the batched (float64) model, and its slice of the gradient of the
    summed mean losses, are seed i's plain module's (operands (S, B))."""
    from grokverify.engine.batched import plain_copy
    from grokverify.engine.models import mean_loss_of

    out = model(a, b).detach()
    model.loss_and_grads(a, b, y, torch.ones(len(a), dtype=torch.float64))
    for i in range(len(a)):
        plain = plain_copy(model, i)
        torch.testing.assert_close(plain(a[i], b[i]), out[i], rtol=0, atol=1e-13)
        mean_loss_of(plain, plain(a[i], b[i]), y[i]).backward()
        for name, param in plain.named_parameters():
            torch.testing.assert_close(model.grad(name)[i], param.grad, rtol=1e-12, atol=1e-13,
                                       msg=name)


@pytest.fixture
def mnist_env(tiny_images: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """GROKVERIFY_DATA_DIR names the made-up MNIST files for one test."""
    from grokverify.engine.datasets import ENV_VAR

    monkeypatch.setenv(ENV_VAR, str(tiny_images))
    return tiny_images
