"""Rendered names and labels are always valid Kubernetes names, whatever the service is called."""

import kubernetes_validate
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import spec
from tokenscale.api.k8s_names import is_dns1035_label, is_label_value
from tokenscale.planning import plan_service
from tokenscale.render import child_name, derived_names, render_bundle
from tokenscale.render.labels import selector_string

VALID = ["llama", "llama-8b-chat", "a" * 63]
INVALID = ["llama.chat", "8b-chat", "a" * 64, "x" * 253, "llama.3.1-8b.instruct"]


@pytest.mark.parametrize("name", VALID)
def test_valid_names_are_kept(name: str) -> None:
    assert child_name(name) == name
    assert derived_names(name) == []


@pytest.mark.parametrize("name", INVALID)
def test_invalid_names_are_derived_valid_and_said(name: str) -> None:
    child = child_name(name)
    assert is_dns1035_label(child)
    assert is_label_value(child)
    assert derived_names(name)
    assert child in " ".join(derived_names(name))


def test_long_names_sharing_a_prefix_stay_distinct() -> None:
    assert child_name("a" * 70 + "x") != child_name("a" * 70 + "y")


@given(st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", fullmatch=True))
def test_any_object_name_gives_valid_child_names_and_labels(name: str) -> None:
    assert is_dns1035_label(child_name(name))
    for part in selector_string(name).split(","):
        assert is_label_value(part.split("=", 1)[1])


@pytest.mark.parametrize("name", INVALID)
def test_rendered_objects_of_an_odd_name_pass_kubernetes_validation(name: str) -> None:
    s = spec()
    bundle = render_bundle(name, "default", s, plan_service(s), 2)
    for obj in bundle.objects:
        kubernetes_validate.validate(obj, "1.33.0", strict=True)
        assert obj["metadata"]["name"] == child_name(name)
    assert bundle.derived_names
