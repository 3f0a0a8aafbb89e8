"""``spec.serving.speculative``: speculative decoding (a proposer drafts ``k`` tokens, the
target verifies them in one step) and the acceptance rate the planner assumes."""

from typing import Literal, Self

from pydantic import Field, model_validator

from tokenscale.api.base import ApiModel
from tokenscale.api.model import ModelSpec

#: ``auto``: the planner turns it on only where it pays (a draft model when ``draftModel`` is
#: given, else n-gram prompt lookup); the others are vLLM's ``method`` names, always on.
SpeculativeMethod = Literal["auto", "draft_model", "ngram", "eagle", "eagle3", "mtp"]
#: Methods whose proposer is a separate checkpoint vLLM loads (``--speculative-config`` model).
NEEDS_DRAFT: tuple[str, ...] = ("draft_model", "eagle", "eagle3")


class Speculative(ApiModel):
    """Speculative decoding; absent = off."""

    method: SpeculativeMethod = Field(
        description="auto (the planner decides), draft_model, ngram (prompt lookup), eagle, "
        "eagle3 or mtp (the model's own multi-token-prediction layers)."
    )
    num_speculative_tokens: int = Field(
        default=3, ge=1, le=16, description="Tokens proposed per step (k)."
    )
    acceptance_rate: float = Field(
        ge=0.0,
        le=0.99,
        description="Expected share of proposed tokens the target accepts (accepted / drafted, "
        "as vLLM's spec_decode counters measure it); the live value replaces it in status.",
    )
    draft_model: ModelSpec | None = Field(
        default=None,
        description="The proposer checkpoint (draft_model, eagle, eagle3): its name is passed to "
        "vLLM; for draft_model its architecture (catalog, architecture or hfConfig) sizes its "
        "weights and KV.",
    )

    @model_validator(mode="after")
    def _draft(self) -> Self:
        if self.method in NEEDS_DRAFT and self.draft_model is None:
            raise ValueError(
                f"method {self.method} needs draftModel (the proposer checkpoint vLLM loads)"
            )
        if self.method in ("ngram", "mtp") and self.draft_model is not None:
            raise ValueError(f"method {self.method} takes no draftModel; remove it")
        return self
