import pytest

import hiapi


@pytest.fixture(autouse=True)
def float32_policy_after():
    """Every test leaves the global policy as it found it (float32)."""
    yield
    hiapi.mixed_precision.set_global_policy(None)
