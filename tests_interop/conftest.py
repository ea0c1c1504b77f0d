"""The interop suite: tests that run in a venv of their own (mxnet 1.9.1 with numpy 1.23.5,
or numpy 2.0.x), never in the main test run. Hypothesis settings as in tests/conftest.py."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ctensor-interop",
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("ctensor-interop")


def pytest_configure(config) -> None:  # noqa: ANN001
    # mxnet 1.9.1 warns about NumPy, SciPy and distutils names it uses itself, on import and on
    # every nd.array call: nothing ctensor can act on.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:mxnet")
