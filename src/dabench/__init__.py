"""dabench: a benchmark harness for data agents.

Data flows one way: world -> platform <- targets <- agents <- runner -> journal
-> grading/judge -> stats -> report.
"""

import os

__version__ = "0.1.0"

__all__ = ["__version__"]

# NumPy's OpenBLAS keeps its idle worker threads busy-waiting for about 2**28 cycles after
# every call before they sleep: on 2 cores the bootstrap's small matrix products then cost
# twice their CPU (docs/reports.md, "Measured performance"). A short spin changes no result
# (the same threads split the same work); it is read once, when NumPy is first imported.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "12")
