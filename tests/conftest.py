from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def shared_warehouse(tmp_path_factory) -> Path:
    """One warehouse for the session: datasets are generated once and reused, as users would."""
    return tmp_path_factory.mktemp("warehouse")
