"""Prints the directory holding XLA's FFI headers as the installed jaxlib ships them
(``jax.ffi.include_dir()``), found without importing jax or jaxlib; exits 1 when there is none."""

import importlib.util
import os
import sys

spec = importlib.util.find_spec("jaxlib")
for root in (spec.submodule_search_locations or []) if spec else []:
    include = os.path.join(root, "include")
    if os.path.isfile(os.path.join(include, "xla", "ffi", "api", "ffi.h")):
        print(include)
        sys.exit(0)
sys.exit(1)
