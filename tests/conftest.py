"Fixtures shared by the test files."
import pytest


@pytest.fixture(scope='session')
def ray_cluster():
    "One local Ray cluster of 3 CPUs for every test that places workers through Ray (started once: each start costs ~10 s)."
    ray = pytest.importorskip('ray')
    ray.init(num_cpus=3, include_dashboard=False, configure_logging=False)
    yield ray
    ray.shutdown()
