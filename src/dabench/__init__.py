"""dabench: a benchmark harness for data agents.

Data flows one way: world -> platform <- targets <- agents <- runner -> journal
-> grading/judge -> stats -> report.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
