"""pytest configuration of the convx Python tests.

Imports convx (so a missing library fails collection at once, with convx's own message) and
seeds torch's global RNG before every test.
"""

import os
import sys

import pytest
import torch

try:
    import convx  # noqa: F401
except ImportError as exc:
    if "convx" in sys.modules or not str(exc).startswith("No module named"):
        raise
    # Running from a source checkout without PYTHONPATH=python.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "python"))
    import convx  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # `import helpers`


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: compiles with torch.compile/inductor (tens of seconds)")


@pytest.fixture(autouse=True)
def _seed_rng():
    torch.manual_seed(0)
    yield
