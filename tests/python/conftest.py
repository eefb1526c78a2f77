# SPDX-License-Identifier: MIT OR Apache-2.0
"""pytest fixtures for the Python binding: hubguest.testing's make_hub (a
real hubd with a config of the test's own, stopped and checked at the
end), run from the build tree ($HUB_BUILD, default build/), and a hub
with the usual guests."""
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.abspath(os.environ.get("HUB_BUILD", os.path.join(ROOT, "build")))
os.environ["HUB_BUILD"] = BUILD         # where hubguest.testing finds hubd and hubctl
PYGUESTS = os.path.join(HERE, "guests")

pytest_plugins = ["hubguest.testing"]

# C guests of the build, Python ones of tests/python/guests
ECHO = "[guest echo]\nexec = %s/guests/echo\n" % BUILD
COUNTER = "[guest counter]\nexec = %s/guests/counter\n" % BUILD
PROBER = "[guest prober]\nexec = %s/tests/guests/prober\n" % BUILD
PYGUEST = "[guest pyguest]\nexec = %s/pyguest.py\nprovides = py.*\n" % PYGUESTS
PYASYNC = "[guest pyasync]\nexec = %s/pyasync.py\nprovides = aio.*\n" % PYGUESTS


@pytest.fixture
def hub(make_hub):
    """echo, counter and prober in C, pyguest in Python, all up."""
    return make_hub(ECHO + COUNTER + PROBER + PYGUEST, up=("echo", "counter", "prober", "pyguest"),
                    wait=("echo.echo", "counter.count", "prober.route", "py.str", "py.log"))
