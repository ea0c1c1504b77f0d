"""Hypothesis settings shared by every test file.

`allow_subnormal=False` (used so that flush-to-zero differences between float16 conversions do not
count as errors) makes Hypothesis reject a share of float16 draws; that share varies from run to
run, so the filter health check would fail at random. Large conv2d/matmul/reduction draws are
slow to generate on a 2-core machine for the same kind of reason. Both are expected here, not
signs of a broken strategy, so those two checks are turned off; every other one stays on."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ctensor",
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("ctensor")
