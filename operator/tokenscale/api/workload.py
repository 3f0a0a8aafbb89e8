"""``spec.workload``: the traffic to serve (rates and token-length distributions), whole or as
the sum of its classes (``spec.workload.classes``, api/classes.py)."""

from typing import Any, Self

from pydantic import ConfigDict, Field, model_validator

from tokenscale.api.base import MAX_TOKENS, ApiModel
from tokenscale.api.classes import WorkloadClass, duplicate_names, sum_rps, tokens_of
from tokenscale.api.workload_stats import Rps, TokenDistribution

__all__ = ["Rps", "TokenDistribution", "Workload", "WorkloadClass"]


def _totals_optional(schema: dict[str, Any]) -> None:
    """In the CRD, rps and the token distributions may be left out (the classes' sum fills
    them; the operator's validation names them when neither is given)."""
    schema["required"] = [
        k for k in schema.get("required", []) if k not in ("rps", "inputTokens", "outputTokens")
    ]
    if not schema["required"]:
        del schema["required"]


class Workload(ApiModel):
    """The forecast traffic."""

    model_config = ConfigDict(json_schema_extra=_totals_optional)

    rps: Rps = Field(description="Request rate.")
    input_tokens: TokenDistribution = Field(description="Prompt tokens per request.")
    output_tokens: TokenDistribution = Field(description="Generated tokens per request.")
    max_context_tokens: int | None = Field(
        default=None,
        gt=0,
        le=MAX_TOKENS,
        description="Longest prompt+output to accept (--max-model-len); absent = the model's max.",
    )
    streaming: bool = Field(default=True, description="Clients stream tokens (TTFT matters).")
    prefix_cache_hit_rate: float = Field(
        default=0.0,
        ge=0.0,
        lt=1.0,
        description="Share of prompt tokens served from the prefix cache (skips their prefill).",
    )
    classes: list[WorkloadClass] | None = Field(
        default=None,
        min_length=1,
        max_length=32,
        description="Tenants/priorities sharing the fleet (docs/tenants.md). When given, rps, "
        "inputTokens and outputTokens may be left out: they become the classes' sum (rates "
        "add; token means weighted by mean rate; P95/P99 the mixture's quantiles). Stated "
        "anyway, they must agree with the sum.",
    )

    @model_validator(mode="before")
    @classmethod
    def _totals_from_classes(cls, data: Any) -> Any:
        """Fill absent totals from the classes that parse (a class that does not is named by
        its own error; none parses: the input as it is, and field validation names it)."""
        if not isinstance(data, dict) or not isinstance(data.get("classes"), list):
            return data
        keys = {"rps": ("rps",), "in": ("inputTokens", "input_tokens")}
        keys["out"] = ("outputTokens", "output_tokens")
        if all(any(k in data for k in names) for names in keys.values()):
            return data
        classes = []
        for raw in data["classes"]:
            try:
                classes.append(WorkloadClass.model_validate(raw))
            except (ValueError, TypeError):
                continue  # its own error names it; the sum of the others fills the totals
        if not classes:
            return data
        filled = dict(data)
        ins, outs = tokens_of(classes)
        if not any(k in data for k in keys["rps"]):
            filled["rps"] = sum_rps(classes)
        if not any(k in data for k in keys["in"]):
            filled["inputTokens"] = ins
        if not any(k in data for k in keys["out"]):
            filled["outputTokens"] = outs
        return filled

    @model_validator(mode="after")
    def _classes_agree(self) -> Self:
        classes = self.classes
        if not classes:
            return self
        for name in duplicate_names(classes):
            raise ValueError(
                f"classes: the name {name!r} is given twice; every class needs its own name "
                "(it names the class's InferenceObjective and its rows in the plan)"
            )
        if not any(c.guaranteed for c in classes):
            raise ValueError(
                "classes: no class is critical or standard, so the fleet has nothing to be "
                "sized for; give at least one class priority standard or critical"
            )
        total = sum_rps(classes)
        if abs(self.rps.mean - total.mean) > 0.01 * max(total.mean, 1e-9):
            raise ValueError(
                f"rps.mean={self.rps.mean:g} disagrees with the classes' sum "
                f"{total.mean:g} (classes[*].rps.mean): drop rps to take the sum, or correct it"
            )
        top_peak = max(c.design_rps for c in classes)
        if self.rps.design_rps < top_peak * 0.99 or self.rps.design_rps > total.design_rps * 1.01:
            raise ValueError(
                f"the stated peak rps {self.rps.design_rps:g} is outside what the classes allow "
                f"(from the largest class peak {top_peak:g} to the sum of peaks "
                f"{total.design_rps:g}): drop rps to take the sum, or correct it"
            )
        ins, outs = tokens_of(classes)
        for field, stated, summed in (
            ("inputTokens.mean", self.input_tokens.mean, ins.mean),
            ("outputTokens.mean", self.output_tokens.mean, outs.mean),
        ):
            if abs(stated - summed) > 0.02 * summed:
                raise ValueError(
                    f"{field}={stated:g} disagrees with the classes' rate-weighted mean "
                    f"{summed:.4g}: drop it to take the sum, or correct it"
                )
        return self

    @property
    def guaranteed_classes(self) -> list[WorkloadClass]:
        return [c for c in self.classes or [] if c.guaranteed]

    @property
    def sheddable_classes(self) -> list[WorkloadClass]:
        return [c for c in self.classes or [] if not c.guaranteed]
