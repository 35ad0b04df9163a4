"""PyTorch eager, the baseline users would run instead: the zoo's own PyTorch definitions."""

import pytest

from recommender.networks.torch_zoo import NETWORKS, eager_timer, torch_module
from recommender.networks.zoo import zoo_index


def test_every_zoo_network_has_its_pytorch_definition():
    assert set(NETWORKS) == set(zoo_index())


@pytest.mark.parametrize("name", ["alexnet", "mobilebert"])
def test_eager_runs_the_zoo_networks_input_and_times_a_round(name):
    module, inputs = torch_module(name)
    [spec] = zoo_index()[name].inputs
    assert list(inputs) == [spec.name]  # the name the Relax graph's input has
    assert tuple(inputs[spec.name].shape) == spec.shape
    assert str(inputs[spec.name].dtype) == f"torch.{spec.dtype}"
    seconds = eager_timer(name, threads=1)()
    assert 1e-5 < seconds < 5
