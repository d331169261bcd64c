"""One experiment: task, model, optimizer, training, probes and interventions: everything that
determines a seed's training run, hashed into its store key."""

from __future__ import annotations

from pydantic import Field, model_validator

from grokverify.claim.base import Float, Int, StrictModel
from grokverify.claim.interventions import EVAL_CURVES, InterventionSpec
from grokverify.claim.limits import MAX_BATCH, MAX_STEPS
from grokverify.claim.models import ROLE_WORDS
from grokverify.claim.optimizers import OptimizerSpec
from grokverify.claim.probes import ProbeSpec
from grokverify.claim.tasks import AnyTask
from grokverify.kinds import INTERVENTIONS, MODELS, PROBES


class TrainingSpec(StrictModel):
    steps: Int = Field(ge=0, le=MAX_STEPS, description="training budget in optimizer steps "
                                                       "(0: the initialisation is measured)")
    batch_size: Int | None = Field(
        None, gt=0, le=MAX_BATCH,
        description="null: full batch; at most the split's training pairs (checked at load)")
    eval_interval: Int = Field(gt=0, le=MAX_STEPS, description="steps between evaluations")
    train_threshold: Float = Field(0.99, ge=0, le=1, description="τ_train on train accuracy")
    val_threshold: Float = Field(0.95, ge=0, le=1, description="τ_val on validation accuracy")
    early_stop: bool = Field(
        True, description="freeze a seed's record once both thresholds are reached")

    @model_validator(mode="after")
    def _interval_fits(self) -> TrainingSpec:
        if self.eval_interval > self.steps > 0:
            raise ValueError(f"eval_interval ({self.eval_interval}) exceeds steps ({self.steps})")
        return self


AnyModel = MODELS.union()


AnyProbe = PROBES.union()


AnyIntervention = INTERVENTIONS.union()


class ExperimentSpec(StrictModel):
    """Everything that determines one seed's training run and what is recorded of it (hashed
    into its store key)."""

    task: AnyTask
    model: AnyModel
    optimizer: OptimizerSpec
    training: TrainingSpec
    probes: list[AnyProbe] = Field(
        default_factory=list, description="measurements recorded as curves during training")
    interventions: list[AnyIntervention] = Field(
        default_factory=list, description="changes to training at declared points")

    @model_validator(mode="after")
    def _optimizer_fits_model(self) -> ExperimentSpec:
        opt = self.optimizer
        if not type(self.model).has_embedding() and (
                opt.emb_lr_mult != 1 or opt.emb_lr is not None
                or opt.emb_weight_decay is not None):
            raise ValueError(f"model {self.model.kind!r} has no embedding group: "
                             "emb_lr_mult/emb_lr/emb_weight_decay do not apply")
        return self

    @model_validator(mode="after")
    def _inputs_match(self) -> ExperimentSpec:
        """A model reads operand pairs or images; so does each probe and intervention."""
        gives = self.task.inputs
        words = {"pairs": "operand pairs", "images": "images"}
        if type(self.model).inputs != gives:
            raise ValueError(f"model {self.model.kind!r} reads {words[type(self.model).inputs]}, "
                             f"and this task gives {words[gives]}")
        declared: list[ProbeSpec | InterventionSpec] = [*self.probes, *self.interventions]
        for item in declared:
            if gives not in type(item).inputs:
                raise ValueError(f"{item.name} measures or changes training on "  # type: ignore[attr-defined]
                                 f"{' or '.join(words[i] for i in type(item).inputs)} only, and "
                                 f"this task gives {words[gives]}")
        return self

    @model_validator(mode="after")
    def _roles_exist(self) -> ExperimentSpec:
        roles = type(self.model).roles
        declared: list[ProbeSpec | InterventionSpec] = [*self.probes, *self.interventions]
        for item in declared:
            for role in item.roles_needed():
                if role not in roles:
                    raise ValueError(
                        f"{item.name} needs {ROLE_WORDS[role]} ({role}), which model "  # type: ignore[attr-defined]
                        f"{self.model.kind!r} does not have (it has: {', '.join(roles)})")
        for probe in self.probes:
            if why := probe.cannot_measure(self.task):
                raise ValueError(why)
        names = [p.name for p in self.probes]  # type: ignore[attr-defined]
        if len(set(names)) != len(names):
            raise ValueError(f"each probe once (got {names}); one probe records all its curves")
        return self

    def curves(self) -> list[str]:
        """The curves every seed's record of this experiment holds (what a value metric can
        read)."""
        return [*EVAL_CURVES, *(c for p in [*self.probes, *self.interventions]
                                for c in p.curves())]
